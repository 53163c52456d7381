"""Prometheus metrics of the whole system, as the gateway sees it.

Stage latencies and failures come from the event streams every task already writes: a small
consumer (:class:`StreamMetrics`) follows the questions and index jobs this gateway accepted (each
entry read once, as it comes), and when one finishes reads its stream once and observes each
``done`` event's ``elapsed_ms``. A Redis
sorted set of pending ids (scored by when each was accepted) with an atomic ``ZREM`` makes exactly
one replica observe each finished job.
Queue depths are read from Redis (``LLEN`` of each Celery queue) at scrape time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import cast

import redis
import redis.asyncio as aioredis
from fastapi import HTTPException, Request, status
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from shared.contracts import Event
from shared.events import TERMINAL_STAGE, StreamEntries, decode_entry
from shared.logging import bind_question
from shared.redis_keys import METRICS_PENDING_KEY, events_key, stream_kind_key
from shared.stage_events import Stage
from shared.topology import QUEUES

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class QueueDepthCollector(Collector):
    def __init__(self, redis_url: str) -> None:
        self.client = redis.Redis.from_url(redis_url, socket_timeout=2)

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "hindsight_queue_depth", "Messages waiting in a Celery queue", labels=["queue"]
        )
        try:
            pipe = self.client.pipeline()
            for queue in QUEUES:
                pipe.llen(queue)
            for queue, depth in zip(QUEUES, pipe.execute(), strict=True):
                family.add_metric([queue], float(depth))
        except redis.RedisError as exc:
            log.warning("queue depths unavailable: %s", exc)
        yield family


class Metrics:
    """The gateway's registry and the instruments in it."""

    def __init__(self, redis_url: str) -> None:
        self.registry = CollectorRegistry()
        self.stage_latency = Histogram(
            "hindsight_stage_latency_seconds",
            "Time each pipeline stage took, from the done events of the event streams",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.tasks_failed = Counter(
            "hindsight_tasks_failed", "Stages that reported failure", ["stage"], registry=self.registry
        )
        self.questions = Counter(
            "hindsight_questions", "Questions finished, by outcome", ["status"], registry=self.registry
        )
        self.documents_indexed = Counter(
            "hindsight_documents_indexed", "Documents indexed (new or changed)", registry=self.registry
        )
        self.rejections = Counter(
            "hindsight_http_rejections", "Requests refused, by reason", ["reason"], registry=self.registry
        )
        self.registry.register(QueueDepthCollector(redis_url))

    def observe_question(self, events: list[Event]) -> None:
        for event in events:
            if event.status == "failed":
                self.tasks_failed.labels(event.stage).inc()
            elif event.stage == Stage.MAP and event.status == "progress":
                self.stage_latency.labels(Stage.MAP).observe(event.elapsed_ms / 1000)
            elif event.status in ("done", "skipped") and event.elapsed_ms:
                self.stage_latency.labels(event.stage).observe(event.elapsed_ms / 1000)
        final = events[-1] if events else None
        outcome = "done" if final and final.stage == TERMINAL_STAGE and final.status == "done" else "failed"
        self.questions.labels(outcome).inc()

    def observe_index_job(self, events: list[Event]) -> None:
        for event in events:
            if event.stage == Stage.DOCUMENT:
                if event.status == "done":
                    self.documents_indexed.inc()
                else:
                    self.tasks_failed.labels(Stage.DOCUMENT).inc()
            elif event.status == "failed":
                self.tasks_failed.labels(event.stage).inc()
            elif event.stage == Stage.SCAN and event.status == "done":
                self.stage_latency.labels(Stage.SCAN).observe(event.elapsed_ms / 1000)


def record_rejection(request: Request, reason: str) -> None:
    request.app.state.metrics.rejections.labels(reason).inc()


def pending_member(kind: str, stream_id: str) -> str:
    return f"{kind}:{stream_id}"


async def track(client: aioredis.Redis, kind: str, stream_id: str, ttl_s: int) -> None:
    """Remember an accepted question (``q``) or index job (``i``), with when, until its stream ends,
    and which of the two it is for as long as its events are kept."""
    pipe = client.pipeline()
    pipe.zadd(METRICS_PENDING_KEY, {pending_member(kind, stream_id): time.time()})
    pipe.set(stream_kind_key(stream_id), kind, ex=ttl_s)
    await pipe.execute()


async def require_known_stream(client: aioredis.Redis, kind: str, stream_id: str) -> float | None:
    """404 unless this gateway accepted a ``kind`` job (question or index job) with this id; when it
    is still pending, the time it was accepted."""
    if await client.get(stream_kind_key(stream_id)) != kind:
        what = "question" if kind == "q" else "index job"
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no {what} with id {stream_id}")
    score = await client.zscore(METRICS_PENDING_KEY, pending_member(kind, stream_id))
    return float(score) if score is not None else None


def finished(kind: str, events: list[Event]) -> bool:
    terminal = TERMINAL_STAGE if kind == "q" else Stage.INDEX
    return any(e.stage == terminal and e.status in ("done", "failed") for e in events)


@dataclass
class FollowedStream:
    """How far this replica has read a pending job's event stream."""

    last_id: str = ""  # the last entry read; "" before the first
    finished: bool = False  # its terminal event was among the entries read


class StreamMetrics:
    """Polls the pending set; observes each finished job exactly once across replicas.

    A sweep reads only the entries appended to each pending stream since the previous sweep, so its
    cost follows what happened since, not the job's length (an index job of 100k chunks writes an
    event per file, thousands, read once each); the whole stream is read once, when the job ends.
    """

    def __init__(
        self, client: aioredis.Redis, metrics: Metrics, poll_s: float, forget_after_s: float
    ) -> None:
        self.client, self.metrics, self.poll_s = client, metrics, poll_s
        self.forget_after_s = forget_after_s
        self.followed: dict[str, FollowedStream] = {}  # by pending member

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self.sweep()
            except (redis.RedisError, OSError) as exc:
                log.warning("metrics sweep failed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.poll_s)

    async def sweep(self) -> None:
        pending = cast(
            list[tuple[str, float]], await self.client.zrange(METRICS_PENDING_KEY, 0, -1, withscores=True)
        )
        for gone in self.followed.keys() - {member for member, _ in pending}:  # another replica's now
            del self.followed[gone]
        for member, accepted_at in pending:
            kind, _, stream_id = member.partition(":")
            followed = self.followed.setdefault(member, FollowedStream())
            await self.read_new(kind, stream_id, followed)
            abandoned = not followed.last_id and time.time() - accepted_at > self.forget_after_s
            if not (followed.finished or abandoned):
                continue
            del self.followed[member]
            if await self.client.zrem(METRICS_PENDING_KEY, member) and followed.last_id:
                entries = cast(StreamEntries, await self.client.xrange(events_key(stream_id)))
                events = [decode_entry(fields) for _, fields in entries]
                with bind_question(stream_id):
                    log.info("observed %s finished job", "question" if kind == "q" else "index")
                (self.metrics.observe_question if kind == "q" else self.metrics.observe_index_job)(events)

    async def read_new(self, kind: str, stream_id: str, followed: FollowedStream) -> None:
        """Read the stream's entries after the last one read (all of them the first time)."""
        after = f"({followed.last_id}" if followed.last_id else "-"
        entries = cast(StreamEntries, await self.client.xrange(events_key(stream_id), min=after))
        if entries:
            followed.last_id = entries[-1][0]
            followed.finished = followed.finished or finished(kind, [decode_entry(f) for _, f in entries])
        elif followed.last_id and not await self.client.exists(events_key(stream_id)):
            followed.last_id = ""  # its events expired unfinished: as if none had been written


@contextlib.asynccontextmanager
async def running(consumer: StreamMetrics) -> AsyncIterator[None]:
    """Run the consumer for as long as the application lives; stop it by flag, not by cancellation.

    A flag, because a cancellation that lands inside a Redis call can be swallowed by the client,
    which would leave shutdown waiting for ever.
    """
    stopping = asyncio.Event()
    task = asyncio.create_task(consumer.run(stopping))
    try:
        yield
    finally:
        stopping.set()
        try:
            await asyncio.wait_for(task, timeout=5)
        except TimeoutError:
            log.warning("metrics consumer did not stop within 5s")
