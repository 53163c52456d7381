"""The gateway's metrics consumer on a real Redis: a sweep reads only what a pending job's stream gained
since the previous sweep (an index job of 100k chunks writes thousands of events, and re-reading them
every second took a tenth of a core from the embedder), and a finished job is observed once, whole."""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio as aioredis

from services.gateway.metrics import Metrics, StreamMetrics, track
from shared.contracts import IndexFileResult, IndexProgress, ScanReport
from shared.events import EventStream
from shared.redis_keys import METRICS_PENDING_KEY, events_key
from shared.stage_events import DocumentData, Stage


class CountingClient:
    """The real async client, counting the stream entries its ``xrange`` calls hand back."""

    def __init__(self, client: aioredis.Redis) -> None:
        self.client, self.entries_read = client, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def xrange(self, *args: Any, **kwargs: Any) -> Any:
        entries = await self.client.xrange(*args, **kwargs)
        self.entries_read += len(entries)
        return entries


def file_done(stream: EventStream, n: int) -> None:
    result = IndexFileResult(path=f"/docs/{n}.md", status="indexed", chunks=3)
    progress = IndexProgress(job_id=stream.stream_id)
    stream.emit(
        Stage.DOCUMENT, "done", f"{n}.md: 3 chunks", data=DocumentData(result=result, progress=progress)
    )


def test_a_sweep_reads_only_new_events_and_a_finished_job_is_observed_once(redis_url: str) -> None:
    sync_client = redis.Redis.from_url(redis_url, decode_responses=True)
    sync_client.flushdb()
    stream = EventStream("job-long", client=sync_client, ttl_s=600)
    metrics = Metrics(redis_url)

    async def sweeps() -> list[int]:
        client = CountingClient(aioredis.Redis.from_url(redis_url, decode_responses=True))
        consumer = StreamMetrics(client, metrics, poll_s=1.0, forget_after_s=600)  # type: ignore[arg-type]
        await track(client.client, "i", "job-long", 600)
        read_per_sweep = []
        for batch in range(3):
            for n in range(batch * 200, batch * 200 + 200):
                file_done(stream, n)
            before = client.entries_read
            await consumer.sweep()
            read_per_sweep.append(client.entries_read - before)
        stream.emit(Stage.INDEX, "done", "600 files", data=ScanReport(job_id="job-long", root="/docs"))
        before = client.entries_read
        await consumer.sweep()  # sees the end, then reads the whole stream once to observe it
        await consumer.sweep()  # nothing pending: reads nothing, observes nothing again
        return [*read_per_sweep, client.entries_read - before]

    read_per_sweep = asyncio.run(sweeps())
    assert read_per_sweep == [200, 200, 200, 1 + 601]  # not 200, 400, 600: each entry once, then all once
    assert metrics.registry.get_sample_value("hindsight_documents_indexed_total") == 600
    assert sync_client.zcard(METRICS_PENDING_KEY) == 0


def test_a_job_whose_events_expired_unfinished_is_forgotten_without_being_observed(redis_url: str) -> None:
    sync_client = redis.Redis.from_url(redis_url, decode_responses=True)
    sync_client.flushdb()
    stream = EventStream("job-expired", client=sync_client, ttl_s=600)
    metrics = Metrics(redis_url)

    async def sweeps() -> None:
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        consumer = StreamMetrics(client, metrics, poll_s=1.0, forget_after_s=0.0)
        await track(client, "i", "job-expired", 600)
        file_done(stream, 1)
        await consumer.sweep()  # read, not finished: still pending
        assert await client.zcard(METRICS_PENDING_KEY) == 1
        sync_client.delete(events_key("job-expired"))  # its TTL ran out
        await consumer.sweep()

    asyncio.run(sweeps())
    assert sync_client.zcard(METRICS_PENDING_KEY) == 0
    assert metrics.registry.get_sample_value("hindsight_documents_indexed_total") == 0
