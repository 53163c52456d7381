"""``/v1/index``: start (or re-sync) indexing a folder and stream its progress."""

from __future__ import annotations

import asyncio
import uuid

from fastapi import APIRouter, Request, status
from sse_starlette.sse import EventSourceResponse

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.limits import enforce_backpressure
from services.gateway.metrics import require_known_stream, track
from services.gateway.paths import confined_path
from services.gateway.routes.library import record_index_job
from services.gateway.schemas import IndexAccepted, IndexStart, IndexStatus
from services.gateway.streaming import stream_events
from shared.contracts import IndexRequest, ScanReport
from shared.events import index_report_key
from shared.index_jobs import read_progress
from shared.tasking import enqueue_index
from shared.topology import INDEX_QUEUES

router = APIRouter(prefix="/v1/index", tags=["index"])


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=IndexAccepted)
async def index(body: IndexStart, request: Request, client: RedisDep, settings: SettingsDep) -> IndexAccepted:
    root = confined_path(body.root, settings.roots)
    await enforce_backpressure(request, client, INDEX_QUEUES, settings)
    job_id = uuid.uuid4().hex
    await track(client, "i", job_id)
    await record_index_job(client, str(root), job_id)
    await asyncio.to_thread(enqueue_index, IndexRequest(job_id=job_id, root=str(root)))
    return IndexAccepted(
        job_id=job_id, status_url=f"/v1/index/{job_id}", events_url=f"/v1/index/{job_id}/events"
    )


@router.get("/{job_id}", response_model=IndexStatus)
async def index_status(job_id: str, client: RedisDep) -> IndexStatus:
    raw = await client.get(index_report_key(job_id))
    if raw:
        return IndexStatus(job_id=job_id, status="done", report=ScanReport.model_validate_json(raw))
    await require_known_stream(client, "i", job_id)
    return IndexStatus(
        job_id=job_id, status="running", progress=await asyncio.to_thread(read_progress, job_id)
    )


@router.get("/{job_id}/events")
async def index_events(job_id: str, request: Request, client: RedisDep) -> EventSourceResponse:
    await require_known_stream(client, "i", job_id)
    return EventSourceResponse(stream_events(request, client, job_id, "index"))
