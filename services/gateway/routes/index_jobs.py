"""``/v1/index``: start (or re-sync) indexing a folder, stream its progress, cancel it."""

from __future__ import annotations

import asyncio
import time
import uuid

from fastapi import APIRouter, Request, status
from sse_starlette.sse import EventSourceResponse

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.limits import enforce_backpressure
from services.gateway.metrics import require_known_stream, track
from services.gateway.paths import confined_folder
from services.gateway.routes.library import record_index_job
from services.gateway.schemas import (
    EVENT_STREAM_RESPONSES,
    IndexAccepted,
    IndexStart,
    IndexStatus,
    JobId,
    error_responses,
)
from services.gateway.streaming import STREAM_START, LastEventId, event_stream, last_written
from shared.contracts import IndexRequest, ScanReport
from shared.index_jobs import read_progress
from shared.redis_keys import index_cancelled_key, index_report_key, stream_kind_key
from shared.stage_events import Stage
from shared.tasking import enqueue_index
from shared.topology import INDEX_QUEUES

router = APIRouter(prefix="/v1/index", tags=["index"])


@router.post(
    "", status_code=status.HTTP_202_ACCEPTED, response_model=IndexAccepted, responses=error_responses(403)
)
async def index(body: IndexStart, request: Request, client: RedisDep, settings: SettingsDep) -> IndexAccepted:
    root = confined_folder(body.root, settings.indexing, settings.roots_file)
    await enforce_backpressure(request, client, INDEX_QUEUES, settings.gateway)
    job_id = uuid.uuid4().hex
    await track(client, "i", job_id, settings.tasks.event_ttl_s)
    await record_index_job(client, str(root), job_id)
    await asyncio.to_thread(enqueue_index, IndexRequest(job_id=job_id, root=str(root), force=body.force))
    return IndexAccepted(
        job_id=job_id, status_url=f"/v1/index/{job_id}", events_url=f"/v1/index/{job_id}/events"
    )


@router.get("/{job_id}", response_model=IndexStatus)
async def index_status(job_id: JobId, client: RedisDep, settings: SettingsDep) -> IndexStatus:
    """``done`` with the report (``cancelled`` with it for a job cancelled before its end);
    ``cancelled`` with the progress while the batch being indexed when it was cancelled finishes;
    ``failed`` once nothing happened for the job time limit (its worker stopped, or none ever took
    it); else ``running`` with the progress."""
    accepted_at = await require_known_stream(client, "i", job_id)
    raw = await client.get(index_report_key(job_id))
    if raw:
        report = ScanReport.model_validate_json(raw)
        return IndexStatus(job_id=job_id, status="cancelled" if report.cancelled else "done", report=report)
    if await client.exists(index_cancelled_key(job_id)):
        progress = await asyncio.to_thread(read_progress, job_id)
        return IndexStatus(job_id=job_id, status="cancelled", progress=progress)
    last_write = await last_written(client, job_id, default=accepted_at or time.time())
    idle_s = time.time() - last_write
    if idle_s > settings.tasks.job_time_limit_s:
        error = f"no progress for {idle_s:.0f}s: the indexer stopped or never took the job; index again"
        return IndexStatus(job_id=job_id, status="failed", error=error)
    return IndexStatus(
        job_id=job_id, status="running", progress=await asyncio.to_thread(read_progress, job_id)
    )


@router.delete("/{job_id}", response_model=IndexStatus)
async def cancel_index(job_id: JobId, client: RedisDep, settings: SettingsDep) -> IndexStatus:
    """Cancel the job: its batches not yet begun are skipped, the one being indexed finishes, files
    already indexed stay indexed, and its stream ends with its report marked cancelled (a ``failed``
    event, "cancelled: ..."). Returns the job's status then; a job already finished is left as it is."""
    await require_known_stream(client, "i", job_id)
    if not await client.exists(index_report_key(job_id)):
        ttl_s = index_cancelled_key.lifetime.ttl_s(settings.tasks)
        await client.set(index_cancelled_key(job_id), "1", ex=ttl_s)
    return await index_status(job_id, client, settings)


@router.get("/{job_id}/events", response_class=EventSourceResponse, responses=EVENT_STREAM_RESPONSES)
async def index_events(
    job_id: JobId,
    request: Request,
    client: RedisDep,
    settings: SettingsDep,
    after: LastEventId = STREAM_START,
) -> EventSourceResponse:
    await require_known_stream(client, "i", job_id)
    idle_limit_s = settings.gateway.stream_idle_s or settings.tasks.job_time_limit_s
    return event_stream(
        request, client, job_id, Stage.INDEX, after, idle_limit_s, record_key=stream_kind_key(job_id)
    )
