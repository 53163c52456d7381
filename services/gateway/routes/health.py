"""``GET /v1/health``: Redis, live workers per queue and each reranker's mode, for key holders.

The worker count comes from a one-second broadcast to the workers; it runs at most once every
``health_cache_s`` seconds whatever the number of callers (they share the last result, and
concurrent callers wait for the one broadcast under way), so health checks cannot tie up the
gateway's thread pool.
"""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis
from fastapi import APIRouter, Request

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.schemas import Health
from services.gateway.worker_census import census, live_workers_per_queue
from shared.contracts import RerankerStatus
from shared.redis_keys import RERANKER_STATUS_PREFIX
from shared.topology import REQUIRED_QUEUES

router = APIRouter(prefix="/v1", tags=["health"])


class HealthCache:
    """The last health reading and when it was taken; one reading at a time."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.reading: Health | None = None
        self.taken_at = 0.0


@router.get("/health", response_model=Health)
async def health(request: Request, client: RedisDep, settings: SettingsDep) -> Health:
    """``ok`` when Redis answers and every queue of an always-on worker has a live worker."""
    cache: HealthCache = request.app.state.health_cache
    async with cache.lock:
        if cache.reading is None or time.monotonic() - cache.taken_at > settings.gateway.health_cache_s:
            cache.reading = await read_health(client)
            cache.taken_at = time.monotonic()
        return cache.reading


async def read_health(client: aioredis.Redis) -> Health:
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
