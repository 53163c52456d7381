"""The HTTP face of Hindsight: accept questions and index jobs, stream their progress, serve results."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

import redis.asyncio as aioredis
from fastapi import Depends, FastAPI, HTTPException, Request, status
from sse_starlette.sse import EventSourceResponse

from services.gateway.schemas import (
    Health,
    IndexAccepted,
    IndexStart,
    IndexStatus,
    QuestionAccepted,
    QuestionRequest,
    QuestionStatus,
)
from services.gateway.workflow import start_index, start_question
from shared.celery_app import QUEUES
from shared.celery_app import app as celery_app
from shared.contracts import Answer, IndexRequest, QuestionState, ScanReport
from shared.events import EVENT_FIELD, TERMINAL_STAGE, answer_key, decode_entry, events_key, index_report_key
from shared.settings import Settings, get_settings

SSE_BLOCK_MS = 15_000


def request_redis(request: Request) -> aioredis.Redis:
    return request.app.state.redis


RedisDep = Annotated[aioredis.Redis, Depends(request_redis)]


def redis_for(settings: Settings) -> aioredis.Redis:
    return aioredis.Redis.from_url(settings.redis_url, decode_responses=True)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    api = FastAPI(
        title="Hindsight",
        version="0.1.0",
        description="Questions over your own research history, answered with exact citations.",
    )
    api.state.redis = redis_for(settings)
    api.state.settings = settings

    @api.post("/v1/questions", status_code=status.HTTP_202_ACCEPTED, response_model=QuestionAccepted)
    async def ask(body: QuestionRequest) -> QuestionAccepted:
        question_id = uuid.uuid4().hex
        state = QuestionState(question_id=question_id, question=body.question.strip(), options=body.options)
        await asyncio.to_thread(start_question, celery_app, state)
        return QuestionAccepted(
            id=question_id,
            status_url=f"/v1/questions/{question_id}",
            events_url=f"/v1/questions/{question_id}/events",
        )

    @api.get("/v1/questions/{question_id}", response_model=QuestionStatus)
    async def question_status(question_id: str, client: RedisDep) -> QuestionStatus:
        raw = await client.get(answer_key(question_id))
        if raw:
            return QuestionStatus(id=question_id, status="done", answer=Answer.model_validate_json(raw))
        last = await client.xrevrange(events_key(question_id), count=1)
        if not last:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no question with id {question_id}")
        event = decode_entry(last[0][1])
        if event.stage == TERMINAL_STAGE and event.status == "failed":
            return QuestionStatus(id=question_id, status="failed", error=event.detail)
        return QuestionStatus(id=question_id, status="pending")

    @api.get("/v1/questions/{question_id}/events")
    async def question_events(question_id: str, request: Request) -> EventSourceResponse:
        return EventSourceResponse(stream_events(request, question_id, TERMINAL_STAGE))

    @api.post("/v1/index", status_code=status.HTTP_202_ACCEPTED, response_model=IndexAccepted)
    async def index(body: IndexStart) -> IndexAccepted:
        root = Path(body.root).expanduser()
        if not root.is_absolute():
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, "root must be an absolute path")
        job_id = uuid.uuid4().hex
        await asyncio.to_thread(start_index, celery_app, IndexRequest(job_id=job_id, root=str(root)))
        return IndexAccepted(
            job_id=job_id, status_url=f"/v1/index/{job_id}", events_url=f"/v1/index/{job_id}/events"
        )

    @api.get("/v1/index/{job_id}", response_model=IndexStatus)
    async def index_status(job_id: str, client: RedisDep) -> IndexStatus:
        raw = await client.get(index_report_key(job_id))
        if raw:
            return IndexStatus(job_id=job_id, status="done", report=ScanReport.model_validate_json(raw))
        if not await client.exists(events_key(job_id)):
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no index job with id {job_id}")
        return IndexStatus(job_id=job_id, status="running")

    @api.get("/v1/index/{job_id}/events")
    async def index_events(job_id: str, request: Request) -> EventSourceResponse:
        return EventSourceResponse(stream_events(request, job_id, "index"))

    @api.get("/healthz", response_model=Health)
    async def healthz(client: RedisDep) -> Health:
        try:
            redis_ok = bool(await client.ping())
        except OSError:
            redis_ok = False
        queues = await asyncio.to_thread(live_workers_per_queue) if redis_ok else {}
        ok = redis_ok and all(queues.get(q, 0) for q in QUEUES if q != "scrape")
        return Health(redis=redis_ok, queues=queues, status="ok" if ok else "degraded")

    return api


def live_workers_per_queue(timeout_s: float = 1.0) -> dict[str, int]:
    """How many live workers consume each queue, from a broadcast ping of the workers."""
    replies = celery_app.control.inspect(timeout=timeout_s).active_queues() or {}
    counts = dict.fromkeys(QUEUES, 0)
    for queues in replies.values():
        for queue in queues:
            counts[queue["name"]] = counts.get(queue["name"], 0) + 1
    return counts


async def stream_events(
    request: Request, stream_id: str, terminal_stage: str
) -> AsyncIterator[dict[str, str]]:
    """Server-sent events of the stream, resuming after ``Last-Event-ID``, ending at the terminal stage."""
    client: aioredis.Redis = request.app.state.redis
    after = request.headers.get("last-event-id", "0-0")
    while not await request.is_disconnected():
        reply = await client.xread({events_key(stream_id): after}, block=SSE_BLOCK_MS)
        if not reply:
            yield {"comment": "keep-alive"}
            continue
        for _, entries in reply:
            for entry_id, fields in entries:
                after = entry_id
                event = decode_entry(fields)
                yield {"id": entry_id, "event": event.stage, "data": fields[EVENT_FIELD]}
                if event.stage == terminal_stage and event.status in ("done", "failed"):
                    return


app = create_app()
