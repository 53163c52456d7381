"""Contracts reject what services must never exchange; settings read the documented variables."""

from __future__ import annotations

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
    assert [str(p) for p in settings.roots] == ["/a", "/b/c"]
    assert settings.rerank_threshold == -3.5
    assert settings.hyde_mode.value == "fusion"


def test_strategy_sets_pool_and_reranker_inputs() -> None:
    settings = Settings()
    assert (settings.pool_size(Strategy.PRECISE), settings.rerank_inputs(Strategy.PRECISE)) == (50, 35)
    assert (settings.pool_size(Strategy.EXHAUSTIVE), settings.rerank_inputs(Strategy.EXHAUSTIVE)) == (80, 60)
