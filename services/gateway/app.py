"""The HTTP face of Hindsight: the app factory that assembles routers, auth, limits, metrics and the page.

Every router in ``PROTECTED_ROUTERS`` is mounted behind API-key auth and the per-key rate limit; a
new router is one more entry in that list (``api.include_router(router, dependencies=PROTECTED)``).
``/``, ``/healthz`` and ``/metrics`` stay open: they carry no user data.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import redis.asyncio as aioredis
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, Response
from kombu.exceptions import OperationalError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError

from services.gateway import indexing, questions, search_routes, watch_routes
from services.gateway.auth import PROTECTED
from services.gateway.deps import RedisDep
from services.gateway.keys import KeyFile
from services.gateway.limits import BodySizeLimit
from services.gateway.metrics import Metrics, StreamMetrics, running
from services.gateway.schemas import Health
from services.gateway.streaming import SSE_BLOCK_MS
from shared.celery_app import app as celery_app
from shared.contracts import RerankerStatus
from shared.events import RERANKER_STATUS_PREFIX
from shared.settings import Settings, get_settings
from shared.topology import QUEUES, REQUIRED_QUEUES

STATIC_DIR = Path(__file__).parent / "static"
PROTECTED_ROUTERS: list[APIRouter] = [
    questions.router,
    indexing.router,
    watch_routes.router,
    search_routes.router,
]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    # Longer than an SSE read's XREAD block: redis-py's default 5 s socket timeout would cut streams.
    client = aioredis.Redis.from_url(
        settings.redis_url, decode_responses=True, socket_timeout=SSE_BLOCK_MS / 1000 + 15
    )
    metrics = Metrics(settings.redis_url)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        consumer = StreamMetrics(client, metrics, settings.metrics_poll_s, settings.event_ttl_s)
        async with running(consumer):
            yield
        await client.aclose()

    api = FastAPI(
        title="Hindsight",
        version="0.1.0",
        description="Questions over your own research history, answered with exact citations.",
        lifespan=lifespan,
    )
    api.state.redis = client
    api.state.settings = settings
    api.state.metrics = metrics
    api.state.key_file = KeyFile(settings.keys_file)
    api.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    for router in PROTECTED_ROUTERS:
        api.include_router(router, dependencies=PROTECTED)
    api.include_router(open_router())
    return api


def open_router() -> APIRouter:
    router = APIRouter()

    @router.get("/", include_in_schema=False)
    async def web_page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    @router.get("/metrics", include_in_schema=False)
    async def prometheus_metrics(request: Request) -> Response:
        body = await asyncio.to_thread(generate_latest, request.app.state.metrics.registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    @router.get("/healthz", response_model=Health)
    async def healthz(client: RedisDep) -> Health:
        try:
            redis_ok = bool(await client.ping())
        except (OSError, aioredis.RedisError):
            redis_ok = False
        queues = await asyncio.to_thread(live_workers_per_queue) if redis_ok else {}
        ok = redis_ok and all(queues.get(q, 0) for q in REQUIRED_QUEUES)
        rerankers = await reranker_statuses(client) if redis_ok else []
        return Health(redis=redis_ok, queues=queues, rerankers=rerankers, status="ok" if ok else "degraded")

    return router


async def reranker_statuses(client: aioredis.Redis) -> list[RerankerStatus]:
    """Each live reranker worker's mode: scoring with a model, or passing the fused order through."""
    keys = [key async for key in client.scan_iter(match=f"{RERANKER_STATUS_PREFIX}*")]
    values = await client.mget(keys) if keys else []
    return [RerankerStatus.model_validate_json(v) for v in values if v]


def live_workers_per_queue(timeout_s: float = 1.0) -> dict[str, int]:
    """How many live workers consume each queue, from a broadcast ping of the workers; none while the
    broker cannot be reached (a restarting Redis), so that /healthz says degraded instead of failing."""
    counts = {queue.value: 0 for queue in QUEUES}
    try:
        replies = celery_app.control.inspect(timeout=timeout_s).active_queues() or {}
    except (OSError, RedisError, OperationalError):
        return counts
    for queues in replies.values():
        for queue in queues:
            counts[queue["name"]] = counts.get(queue["name"], 0) + 1
    return counts
