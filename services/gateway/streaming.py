"""Server-sent events read from a Redis stream, resumable with ``Last-Event-ID`` (a value that is
not an entry id of a stream replays it from the start, rather than breaking it).

A stream ends after its terminal event (the answer, or the index job's report), and also when
nothing was written to it for ``idle_limit_s`` (the longest its next stage may run): then a last
``failed`` event says the work stopped, so no reader waits for ever. Redis down for a moment is
waited out (read again each second); Redis back without its data (restarted with no append-only
file) lost the work with the record the gateway wrote on accepting it, and once that record is gone
a last ``failed`` event says so at once. Each caller may hold at most ``max_streams_per_key`` streams
open on this gateway at once (429 beyond).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Annotated, cast

import redis.asyncio as aioredis
from fastapi import Header, HTTPException, Request, status
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sse_starlette.sse import EventSourceResponse

from services.gateway.metrics import record_rejection
from shared.contracts import Event
from shared.events import EVENT_FIELD, StreamEntries, StreamReply, decode_entry
from shared.redis_keys import events_key
from shared.settings import GatewaySettings, TaskSettings

SSE_BLOCK_MS = 15_000
SentEvents = AsyncIterator[dict[str, str]]
LastEventId = Annotated[
    str,
    Header(
        alias="Last-Event-ID",
        max_length=64,
        description="Resume after this event id (the `id` of the last event received); a value that "
        "is not an event id replays the stream from its start.",
    ),
]
STREAM_START = "0-0"
# Each part of a Redis stream entry id (milliseconds, sequence number) is a 64-bit unsigned integer.
STREAM_ID_PART_MAX = 2**64 - 1


def question_idle_limit(gateway: GatewaySettings, tasks: TaskSettings) -> float:
    """How long a question's stream may stay quiet before it counts as stopped: ``STREAM_IDLE_S``, or
    the longest its next step may take (a stalled map stage's wait plus a stage's time limit)."""
    return gateway.stream_idle_s or tasks.question_stall_s + tasks.question_time_limit_s


def resume_point(last_event_id: str) -> str:
    """The stream entry id to read after: ``Last-Event-ID`` when it is one, else the stream's start
    (Redis would refuse anything else, and cut the stream)."""
    millis, dash, sequence = last_event_id.strip().partition("-")
    parts = (millis, sequence)
    if dash and all(p.isascii() and p.isdigit() and int(p) <= STREAM_ID_PART_MAX for p in parts):
        return f"{int(millis)}-{int(sequence)}"
    return STREAM_START


def open_streams(request: Request) -> Counter[str]:
    counts: Counter[str] = request.app.state.open_streams
    return counts


def event_stream(
    request: Request,
    client: aioredis.Redis,
    stream_id: str,
    terminal_stage: str,
    after: str,
    idle_limit_s: float,
    annotate: Callable[[SentEvents], SentEvents] | None = None,
    record_key: str | None = None,
) -> EventSourceResponse:
    """The SSE response for one stream, or 429 when the caller already holds too many open.
    ``annotate`` may rewrite the events on their way out (the questions route turns a quiet spell
    with a stage's worker gone into a ``waiting`` event); ``record_key`` is the key whose loss means
    Redis lost the work."""
    caller = getattr(request.state, "caller", "anonymous")
    limit = request.app.state.settings.gateway.max_streams_per_key
    if open_streams(request)[caller] >= limit:
        record_rejection(request, "streams")
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"{limit} event streams are already open for this key; close one first",
            headers={"Retry-After": "5"},
        )
    events = stream_events(
        request, client, stream_id, terminal_stage, resume_point(after), idle_limit_s, record_key
    )
    return EventSourceResponse(counted(request, caller, annotate(events) if annotate else events))


async def counted(
    request: Request, caller: str, events: AsyncIterator[dict[str, str]]
) -> AsyncIterator[dict[str, str]]:
    """``events``, counted among the caller's open streams while they flow."""
    counts = open_streams(request)
    counts[caller] += 1
    try:
        async for event in events:
            yield event
    finally:
        counts[caller] -= 1


async def last_entry(client: aioredis.Redis, stream_id: str) -> tuple[str, Event] | None:
    """The stream's last entry id and event (``None`` for a stream with none yet)."""
    last = cast(StreamEntries, await client.xrevrange(events_key(stream_id), count=1))
    return (last[0][0], decode_entry(last[0][1])) if last else None


async def last_written(client: aioredis.Redis, stream_id: str, default: float | None = None) -> float:
    """When the stream's last event was written (``default``, or now, for a stream with none yet)."""
    last = await last_entry(client, stream_id)
    if last:
        return last[1].ts
    return time.time() if default is None else default


def entry_order(entry_id: str) -> tuple[int, int]:
    millis, _, sequence = entry_id.partition("-")
    return int(millis), int(sequence or 0)


def is_end(event: Event, terminal_stage: str) -> bool:
    return event.stage == terminal_stage and event.status in ("done", "failed")


async def stream_events(
    request: Request,
    client: aioredis.Redis,
    stream_id: str,
    terminal_stage: str,
    after: str = STREAM_START,
    idle_limit_s: float = float("inf"),
    record_key: str | None = None,
) -> AsyncIterator[dict[str, str]]:
    """Every event of the stream in order, ending after the terminal stage's done or failed event,
    or with a ``failed`` event of the terminal stage once nothing was written for ``idle_limit_s``
    or once ``record_key`` is gone from Redis. Resuming at or past the last entry of a stream that
    has ended ends at once; resuming past the last entry of one still running (an id from the
    future) continues from its last entry."""
    last = await last_entry(client, stream_id)
    if last is not None and entry_order(after) >= entry_order(last[0]):
        if is_end(last[1], terminal_stage):
            return
        after = last[0]
    last_write = last[1].ts if last else time.time()
    block_ms = int(min(SSE_BLOCK_MS, max(idle_limit_s, 0.1) * 1000))
    while not await request.is_disconnected():
        try:
            reply = cast(StreamReply, await client.xread({events_key(stream_id): after}, block=block_ms))
            lost = not reply and record_key is not None and not await client.exists(record_key)
        except (RedisConnectionError, RedisTimeoutError):
            reply, lost = [], False
            await asyncio.sleep(1)
        if lost:
            detail = "Redis lost this work (restarted without its data): start it again"
            yield {"event": terminal_stage, "data": failed(stream_id, terminal_stage, detail)}
            return
        if not reply:
            if time.time() - last_write > idle_limit_s:
                detail = f"no progress for {idle_limit_s:.0f}s: the work stopped; start it again"
                yield {"event": terminal_stage, "data": failed(stream_id, terminal_stage, detail)}
                return
            yield {"comment": "keep-alive"}
            continue
        last_write = time.time()
        for _, entries in reply:
            for entry_id, fields in entries:
                after = entry_id
                event = decode_entry(fields)
                yield {"id": entry_id, "event": event.stage, "data": fields[EVENT_FIELD]}
                if is_end(event, terminal_stage):
                    return


def failed(stream_id: str, terminal_stage: str, detail: str) -> str:
    """The JSON of a last ``failed`` event the gateway adds itself (it has no id: it is not stored)."""
    return Event(stream_id=stream_id, stage=terminal_stage, status="failed", detail=detail).model_dump_json()
