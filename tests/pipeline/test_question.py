"""The question stages as typed plain functions: each takes what the previous one gives, the Celery
edges refuse a payload without it, and the same functions answer a question in one process."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from typing import get_type_hints

import pytest
import redis
from pydantic import ValidationError

from pipeline.question import QuestionParts, answer
from services.indexer.pipeline import sync_root
from services.reranker.stages import rerank
from services.retriever.stages import plan, search
from services.synthesizer.stages import map_batch, reduce, split_into_batches
from shared.contracts import (
    Answer,
    IndexRequest,
    MapBatch,
    MapResult,
    PlannedQuestion,
    Question,
    RerankedQuestion,
    SearchedQuestion,
)
from shared.events import EventStream
from shared.settings import Settings
from tests.conftest import REPO, require_embedder


def takes_and_gives(stage: object) -> tuple[object, object]:
    hints = get_type_hints(stage)
    return next(iter(hints.values())), hints["return"]


def test_each_stage_takes_what_the_previous_one_gives() -> None:
    assert takes_and_gives(plan) == (Question, PlannedQuestion)
    assert takes_and_gives(search) == (PlannedQuestion, SearchedQuestion)
    assert takes_and_gives(rerank) == (SearchedQuestion, RerankedQuestion)
    assert takes_and_gives(split_into_batches) == (RerankedQuestion, list[MapBatch])
    assert takes_and_gives(map_batch) == (MapBatch, MapResult)
    reduce_hints = get_type_hints(reduce)
    assert (reduce_hints["reranked"], reduce_hints["results"], reduce_hints["return"]) == (
        RerankedQuestion,
        list[MapResult],
        Answer,
    )


def test_the_search_task_refuses_a_question_never_planned_and_ends_its_stream(redis_env: redis.Redis) -> None:
    from services.retriever.tasks import search_question

    question = Question(question_id=uuid.uuid4().hex, question="Why is the sky blue?")
    with pytest.raises(ValidationError, match="plan"):
        search_question(question.to_payload())
    assert EventStream(question.question_id, redis_env).read() == []  # refused before the stage began


@pytest.fixture
def indexed_samples(tmp_path: Path) -> Settings:
    """The repository's sample notes indexed into a fresh store, as ``hindsight index samples`` would."""
    samples = tmp_path / "samples"
    shutil.copytree(REPO / "samples", samples)
    settings = Settings(data_dir=tmp_path / "data", models_dir=require_embedder(), roots=[samples])
    parts = QuestionParts.from_settings(settings)
    sync_root(
        IndexRequest(job_id="samples", root=str(samples)),
        parts.store,
        parts.retriever.embedder,
        settings.indexing,
        settings.data_dir,
    )
    return settings


def test_the_stages_answer_a_question_in_one_process_with_a_verified_citation(
    indexed_samples: Settings,
) -> None:
    parts = QuestionParts.from_settings(indexed_samples)
    result = answer(
        Question(question_id="in-process", question="What is my sourdough starter called?"), parts
    )
    assert result.citations, result.markdown
    assert any("Clint" in c.quote and c.verified for c in result.citations), result.markdown
    assert result.question_id == "in-process"


def test_the_in_process_answer_reports_each_stage_seconds_in_chain_order(indexed_samples: Settings) -> None:
    parts = QuestionParts.from_settings(indexed_samples)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    answer(Question(question_id="timed", question="What is my sourdough starter called?"), parts, seconds)
    took = time.perf_counter() - started
    assert list(seconds) == ["plan", "search", "rerank", "map", "reduce"]
    assert all(value >= 0 for value in seconds.values())
    assert sum(seconds.values()) <= took
