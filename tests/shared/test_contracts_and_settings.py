"""Contracts reject what services must never exchange; settings read the documented variables."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from shared.contracts import Chunk, PlannedQuestion, Question, SourceKind, Strategy
from shared.settings import Settings


def chunk(**overrides: object) -> Chunk:
    values: dict[str, object] = {
        "id": "doc:0", "document_id": "doc", "ordinal": 0, "text": "hello world",
        "char_start": 10, "char_end": 21, "title": "T", "source_uri": "/x.md", "kind": SourceKind.MARKDOWN,
    }  # fmt: skip
    return Chunk.model_validate({**values, **overrides})


def test_chunk_span_must_match_its_text_length() -> None:
    assert chunk().char_end == 21
    with pytest.raises(ValidationError, match="span length"):
        chunk(char_end=30)


def test_contracts_refuse_unknown_fields_instead_of_carrying_them() -> None:
    with pytest.raises(ValidationError):
        Question.model_validate({"question_id": "q", "question": "why?", "surprise": 1})


def test_a_stage_refuses_a_payload_without_what_the_previous_stage_gives() -> None:
    """Search takes a planned question: a question that was never planned fails at the boundary."""
    question = Question(question_id="q", question="why?")
    with pytest.raises(ValidationError, match="plan"):
        PlannedQuestion.model_validate(question.to_payload())


def test_a_question_survives_a_json_round_trip_as_a_task_payload() -> None:
    question = Question(question_id="q", question="why?")
    assert Question.model_validate(question.to_payload()) == question


def test_settings_read_prefixed_variables_and_split_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_ROOTS", "/a:/b/c")
    monkeypatch.setenv("HINDSIGHT_RERANK_THRESHOLD", "-3.5")
    monkeypatch.setenv("HINDSIGHT_HYDE_MODE", "fusion")
    settings = Settings()
    assert [str(p) for p in settings.indexing.roots] == ["/a", "/b/c"]
    assert settings.reranking.rerank_threshold == -3.5
    assert settings.retrieval.hyde_mode.value == "fusion"


def test_strategy_sets_pool_and_reranker_inputs() -> None:
    settings = Settings()
    assert (
        settings.retrieval.pool_size(Strategy.PRECISE),
        settings.retrieval.rerank_inputs(Strategy.PRECISE),
    ) == (100, 35)
    assert (
        settings.retrieval.pool_size(Strategy.EXHAUSTIVE),
        settings.retrieval.rerank_inputs(Strategy.EXHAUSTIVE),
    ) == (80, 60)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"chunk_tokens": 64, "chunk_overlap": 64}, "CHUNK_OVERLAP (64) must be less than CHUNK_TOKENS (64)"),
        ({"pool_precise": 20}, "RERANK_INPUTS_PRECISE (35) must not exceed POOL_PRECISE (20)"),
        ({"rerank_inputs_exhaustive": 81}, "RERANK_INPUTS_EXHAUSTIVE (81) must not exceed POOL_EXHAUSTIVE"),
        ({"question_visibility_timeout_s": 60}, "QUESTION_TIME_LIMIT_S (280) must be less than"),
        ({"question_soft_time_limit_s": 280}, "QUESTION_SOFT_TIME_LIMIT_S (280) must be less than"),
        ({"broker_visibility_timeout_s": 600}, "JOB_TIME_LIMIT_S (3500) must be less than"),
        ({"job_soft_time_limit_s": 3500}, "JOB_SOFT_TIME_LIMIT_S (3500) must be less than"),
        ({"question_stall_s": 580}, "QUESTION_STALL_S (580) must exceed QUESTION_VISIBILITY_TIMEOUT_S plus"),
    ],
)
def test_settings_that_contradict_each_other_are_refused_naming_the_variables(
    overrides: dict[str, int], named: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(named)):
        Settings(**overrides)  # type: ignore[arg-type]


def test_a_short_visibility_timeout_is_accepted_once_the_limits_and_stall_time_fit_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A short question visibility timeout is fine once the time limits and the stall time fit it."""
    for name, value in {
        "VISIBILITY_TIMEOUT_S": 20,
        "SOFT_TIME_LIMIT_S": 16,
        "TIME_LIMIT_S": 18,
        "STALL_S": 40,
    }.items():
        monkeypatch.setenv(f"HINDSIGHT_QUESTION_{name}", str(value))
    settings = Settings()
    assert (settings.tasks.question_time_limit_s, settings.tasks.question_stall_s) == (18, 40)
