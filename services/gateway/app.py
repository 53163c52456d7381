"""The HTTP face of Hindsight: the app factory that assembles routers, auth, limits and metrics.

Every router in ``PROTECTED_ROUTERS`` is mounted behind API-key auth and the per-key rate limit; a
new router is one more entry in that list (``api.include_router(router, dependencies=PROTECTED)``).
The routers of ``routes/public.py`` (``/``, ``/healthz``, ``/metrics``) stay open.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import APIRouter, FastAPI

from services.gateway.auth import PROTECTED
from services.gateway.limits import BodySizeLimit
from services.gateway.metrics import Metrics, StreamMetrics, running
from services.gateway.routes import index_jobs, library, public, questions, search, watched_folders
from services.gateway.streaming import SSE_BLOCK_MS
from shared.api_keys import KeyFile
from shared.settings import Settings, get_settings

PROTECTED_ROUTERS: list[APIRouter] = [
    questions.router,
    index_jobs.router,
    watched_folders.router,
    search.router,
    library.router,
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
    api.include_router(public.router)
    return api
