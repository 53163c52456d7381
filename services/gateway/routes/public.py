"""``/`` with the page's ``/static`` files, ``/healthz`` and ``/metrics``: open to anyone who reaches the
gateway; they carry no user data."""

from __future__ import annotations

import asyncio
from pathlib import Path

import redis.asyncio as aioredis
from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import FileResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services.gateway.deps import RedisDep
from services.gateway.schemas import Health
from services.gateway.worker_census import census, live_workers_per_queue
from shared.contracts import RerankerStatus
from shared.events import RERANKER_STATUS_PREFIX
from shared.topology import REQUIRED_QUEUES

STATIC_DIR = Path(__file__).parents[1] / "static"
router = APIRouter()


@router.get("/", include_in_schema=False)
async def web_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


# The page's own files; any other name is 404, so nothing else under the folder is ever served.
PAGE_ASSETS = {"page.css": "text/css", "page.js": "text/javascript"}


@router.get("/static/{name}", include_in_schema=False)
async def page_asset(name: str) -> FileResponse:
    if name not in PAGE_ASSETS:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no file {name}")
    return FileResponse(
        STATIC_DIR / name, media_type=PAGE_ASSETS[name], headers={"Cache-Control": "no-cache"}
    )


@router.get("/metrics", include_in_schema=False)
async def prometheus_metrics(request: Request) -> Response:
    body = await asyncio.to_thread(generate_latest, request.app.state.metrics.registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz", response_model=Health)
async def healthz(client: RedisDep) -> Health:
    """``ok`` when Redis answers and every queue of an always-on worker has a live worker."""
    try:
        redis_ok = bool(await client.ping())
    except (OSError, aioredis.RedisError):
        redis_ok = False
    queues = await asyncio.to_thread(live_workers_per_queue) if redis_ok else {}
    if redis_ok:
        census.record(queues)  # questions asked next need not ping again
    ok = redis_ok and all(queues.get(q, 0) for q in REQUIRED_QUEUES)
    rerankers = await reranker_statuses(client) if redis_ok else []
    return Health(redis=redis_ok, queues=queues, rerankers=rerankers, status="ok" if ok else "degraded")


async def reranker_statuses(client: aioredis.Redis) -> list[RerankerStatus]:
    """Each live reranker worker's mode: scoring with a model, or passing the fused order through."""
    keys = [key async for key in client.scan_iter(match=f"{RERANKER_STATUS_PREFIX}*")]
    values = await client.mget(keys) if keys else []
    return [RerankerStatus.model_validate_json(v) for v in values if v]
