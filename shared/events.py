"""Per-question (and per-index-job) progress on Redis Streams.

Every stage appends events to the stream ``shared.redis_keys.events_key(<id>)``; the gateway turns
the stream into server-sent events and the CLI renders it live. Streams expire ``event_ttl_s`` after the last
write, so finished questions do not pile up in Redis.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar, cast

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from shared.contracts import Answer, Contract, Event, EventStatus
from shared.redis_keys import AS_LONG_AS_EVENTS, answer_key, events_key
from shared.settings import get_settings
from shared.stage_events import AnswerData, Stage, checked_data

EVENT_FIELD = "event"
TERMINAL_STAGE = Stage.ANSWER
WAITING_STAGE = Stage.WAITING


# Retry a command for about 15 s of lost connection: a restarting Redis (a few seconds) must not fail
# the task that was writing its progress or events at that moment.
OUTAGE_RETRY = Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=20)


@lru_cache(maxsize=4)
def redis_client(url: str | None = None) -> redis.Redis:
    return redis.Redis.from_url(
        url or get_settings().redis_url,
        decode_responses=True,
        retry=OUTAGE_RETRY,
        retry_on_error=[redis.ConnectionError, redis.TimeoutError],
    )


# Stream replies as the clients here get them (``decode_responses=True``); redis-py types them loosely.
StreamEntries = list[tuple[str, dict[str, str]]]
StreamReply = list[tuple[str, StreamEntries]]


def decode_entry(fields: dict[str, str]) -> Event:
    return Event.model_validate_json(fields[EVENT_FIELD])


@dataclass
class EventStream:
    """Append and read the events of one stream id."""

    stream_id: str
    client: redis.Redis = field(default_factory=redis_client)
    ttl_s: int = field(default_factory=lambda: events_key.lifetime.ttl_s(get_settings().tasks))

    def emit(
        self,
        stage: Stage,
        status: EventStatus,
        detail: str = "",
        *,
        data: Contract | dict[str, Any] | None = None,
        elapsed_ms: float = 0.0,
    ) -> Event:
        """Append one event; ``data`` must be the model :data:`STAGE_DATA` declares for ``stage``
        (``StageDataMismatchError`` or pydantic's ``ValidationError`` otherwise)."""
        event = Event(
            stream_id=self.stream_id,
            stage=stage,
            status=status,
            detail=detail,
            data=checked_data(stage, data),
            elapsed_ms=round(elapsed_ms, 1),
        )
        key = events_key(self.stream_id)
        pipe = self.client.pipeline()
        pipe.xadd(key, {EVENT_FIELD: event.model_dump_json()})
        pipe.expire(key, self.ttl_s)
        pipe.execute()
        return event

    def read(self, after: str = "0-0", block_ms: int | None = None) -> list[tuple[str, Event]]:
        """Events after the entry id ``after``; waits up to ``block_ms`` when there are none."""
        reply = cast(StreamReply, self.client.xread({events_key(self.stream_id): after}, block=block_ms))
        return [(entry_id, decode_entry(fields)) for _, entries in reply for entry_id, fields in entries]

    @contextmanager
    def stage(self, stage: Stage, detail: str = "") -> Iterator[StageReport]:
        """Emit ``started`` now, then ``done`` (or ``failed``) with the elapsed time.

        The body may set ``report.detail`` and ``report.data`` to describe what it did.
        """
        report = StageReport(detail=detail)
        self.emit(stage, "started", detail)
        start = time.perf_counter()
        try:
            yield report
        except Exception as exc:
            self.emit(
                stage,
                "failed",
                f"{type(exc).__name__}: {exc}",
                elapsed_ms=(time.perf_counter() - start) * 1000,
            )
            raise
        report.elapsed_ms = (time.perf_counter() - start) * 1000
        self.emit(stage, report.status, report.detail, data=report.data, elapsed_ms=report.elapsed_ms)


@dataclass
class StageReport:
    """What a stage did, for its ``done`` event: ``data`` is its stage's model in :data:`STAGE_DATA`
    (a dict only for a stage that declares none)."""

    detail: str = ""
    data: Contract | dict[str, Any] | None = None
    status: EventStatus = "done"
    elapsed_ms: float = 0.0


ModelT = TypeVar("ModelT", bound=Contract)


def store_result(key: str, result: Contract, client: redis.Redis | None = None) -> None:
    """Keep a job's final result (answer, scan report) for as long as its events."""
    (client or redis_client()).set(
        key, result.model_dump_json(), ex=AS_LONG_AS_EVENTS.ttl_s(get_settings().tasks)
    )


def load_result(key: str, model: type[ModelT], client: redis.Redis | None = None) -> ModelT | None:
    raw = (client or redis_client()).get(key)
    return model.model_validate_json(raw) if raw else None


def store_answer(answer: Answer, client: redis.Redis | None = None) -> None:
    """Keep the final answer for ``GET /v1/questions/{id}`` and end the event stream with it."""
    client = client or redis_client()
    store_result(answer_key(answer.question_id), answer, client)
    EventStream(answer.question_id, client).emit(
        TERMINAL_STAGE, "done", "answer ready", data=AnswerData(answer=answer)
    )


def fail_question(question_id: str, reason: str, client: redis.Redis | None = None) -> None:
    """End a question's stream with a failure, so no reader waits for an answer that cannot come."""
    EventStream(question_id, client or redis_client()).emit(TERMINAL_STAGE, "failed", reason)
