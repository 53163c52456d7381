"""The event stream on a real Redis: stages report start, end and failure in order."""

from __future__ import annotations

import uuid

import pytest
import redis
from celery.exceptions import Ignore

from shared.contracts import PlannedQuestion, Question, RerankOutcome
from shared.events import TERMINAL_STAGE, EventStream, StageReport
from shared.redis_keys import cancelled_key, events_key
from shared.settings import get_settings
from shared.stage_events import Stage, stage_data
from shared.tasking import question_task


@pytest.fixture
def client() -> redis.Redis:
    """The Redis every in-process stage writes to (the session's, via the settings)."""
    return redis.Redis.from_url(get_settings().redis_url, decode_responses=True)


def test_stage_emits_started_then_done_with_what_the_body_reported(client: redis.Redis) -> None:
    stream = EventStream(uuid.uuid4().hex, client, ttl_s=60)
    reported = RerankOutcome(
        received=12, kept=4, threshold=0.0, fallback_k=4, used_fallback=False, model=None
    )
    with stream.stage(Stage.RERANK) as report:
        report.detail = "4 of 12 kept"
        report.data = reported
    events = [event for _, event in stream.read()]
    assert [(e.stage, e.status) for e in events] == [("rerank", "started"), ("rerank", "done")]
    assert events[1].detail == "4 of 12 kept" and stage_data(Stage.RERANK, events[1].data) == reported
    assert 0 < client.ttl(events_key(stream.stream_id)) <= 60


def test_stage_emits_failed_with_the_error_and_reraises(client: redis.Redis) -> None:
    stream = EventStream(uuid.uuid4().hex, client, ttl_s=60)
    with pytest.raises(ValueError), stream.stage(Stage.RERANK):
        raise ValueError("model exploded")
    events = [event for _, event in stream.read()]
    assert events[-1].status == "failed" and "model exploded" in events[-1].detail


def test_a_failing_question_stage_ends_the_stream_so_no_reader_waits_forever(client: redis.Redis) -> None:
    @question_task("test.broken_stage", Stage.PLAN)
    def broken(question: Question, report: StageReport) -> PlannedQuestion:
        raise RuntimeError("store unreachable")

    question_id = uuid.uuid4().hex
    with pytest.raises(RuntimeError):
        broken(Question(question_id=question_id, question="why?").to_payload())
    last = EventStream(question_id, client).read()[-1][1]
    assert (last.stage, last.status) == (TERMINAL_STAGE, "failed")
    assert "store unreachable" in last.detail


def test_a_cancelled_questions_stage_does_not_run_and_stops_its_chain(client: redis.Redis) -> None:
    ran: list[str] = []

    @question_task("test.cancelled_stage", Stage.PLAN)
    def plan(question: Question, report: StageReport) -> PlannedQuestion:
        ran.append(question.question_id)
        raise AssertionError("a cancelled question's stage must not run")

    question_id = uuid.uuid4().hex
    client.set(cancelled_key(question_id), "1", ex=60)
    with pytest.raises(Ignore):
        plan(Question(question_id=question_id, question="why?").to_payload())
    assert ran == [] and EventStream(question_id, client).read() == []
