"""The HTTP face of Hindsight: the app factory that assembles routers, auth, limits and metrics.

Every router in ``PROTECTED_ROUTERS`` is mounted behind API-key auth and the per-key rate limit; a
new router is one more entry in that list (``api.include_router(router, dependencies=PROTECTED)``).
The routers of ``routes/public.py`` (``/``, ``/healthz``, ``/metrics``) stay open.

Around them: the Host allow-list and the browser security headers (``security.py``), the body guard
(``limits.py``), and error handlers that keep every refusal a 4xx with the documented body
(:class:`~services.gateway.schemas.ErrorBody`): field errors without the input echoed back, a 405
whose ``Allow`` names every method the path has, and 503 + Retry-After while Redis is unreachable.
The interactive docs are off: they load their scripts from a CDN into the origin that holds the
key; ``/openapi.json`` describes the API.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis
from fastapi import APIRouter, FastAPI, Request, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Match

from services.gateway.auth import PROTECTED
from services.gateway.chat_schemas import openai_error, speaks_openai
from services.gateway.limits import RequestBodyGuard
from services.gateway.metrics import Metrics, StreamMetrics, running
from services.gateway.routes import (
    chat,
    conversations,
    health,
    index_jobs,
    library,
    mcp,
    notes,
    public,
    questions,
    scrape,
    search,
    watched_folders,
)
from services.gateway.routes.health import HealthCache
from services.gateway.schemas import error_responses
from services.gateway.security import SecurityHeaders, allowed_hosts, content_security_policy
from services.gateway.streaming import SSE_BLOCK_MS
from shared.api_keys import KeyFile
from shared.reconnect import RedisCannotPersistError
from shared.settings import GatewaySettings, Settings, get_settings

log = logging.getLogger(__name__)
PROTECTED_ROUTERS: list[APIRouter] = [
    questions.router,
    conversations.router,
    chat.router,
    mcp.router,
    notes.router,
    index_jobs.router,
    watched_folders.router,
    search.router,
    library.router,
    scrape.router,
    health.router,
]
# What any route behind a key may answer besides its own success: no key (401), an unknown id (404),
# a body over the limit (413), a refused field (422), too many requests or streams (429).
PROTECTED_ERRORS = error_responses(401, 404, 413, 422, 429)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    # Longer than an SSE read's XREAD block: redis-py's default 5 s socket timeout would cut streams.
    client = aioredis.Redis.from_url(
        settings.redis_url, decode_responses=True, socket_timeout=SSE_BLOCK_MS / 1000 + 15
    )
    metrics = Metrics(settings.redis_url)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        consumer = StreamMetrics(client, metrics, settings.gateway.metrics_poll_s, settings.tasks.event_ttl_s)
        async with running(consumer), api.state.mcp_sessions.run():
            yield
        await client.aclose()

    api = FastAPI(
        title="Hindsight",
        version="0.1.0",
        description="Questions over your own research history, answered with exact citations.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    api.state.redis = client
    api.state.settings = settings
    api.state.metrics = metrics
    api.state.key_file = KeyFile(settings.keys_file)
    api.state.open_streams = Counter()
    api.state.health_cache = HealthCache()
    api.state.mcp_sessions = mcp.mcp_sessions(api)
    api.add_middleware(RequestBodyGuard, max_bytes=settings.gateway.max_request_bytes)
    api.add_middleware(SecurityHeaders, csp=content_security_policy(public.STATIC_DIR / "index.html"))
    api.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(settings.gateway))
    api.add_exception_handler(RequestValidationError, refused_fields)
    api.add_exception_handler(StarletteHTTPException, http_error)
    api.add_exception_handler(RedisConnectionError, redis_unreachable)
    api.add_exception_handler(RedisCannotPersistError, redis_cannot_persist)
    api.add_exception_handler(RedisTimeoutError, redis_unreachable)
    for router in PROTECTED_ROUTERS:
        api.include_router(router, dependencies=PROTECTED, responses=PROTECTED_ERRORS)
    api.include_router(public.router)
    document_settings(api, settings.gateway)
    return api


def document_settings(api: FastAPI, settings: GatewaySettings) -> None:
    """Write the limits that are settings into the schema the app serves (built once, then cached)."""
    schema = api.openapi()
    question = schema["components"]["schemas"]["QuestionRequest"]["properties"]["question"]
    question["maxLength"] = settings.max_question_chars


async def refused_fields(request: Request, exc: Exception) -> Response:
    """422 with each refused field's location, message and type; the input itself is not echoed
    (it may be what cannot be encoded, or a secret pasted into the wrong field). On the
    OpenAI-compatible paths the body also has OpenAI's ``error`` object, which their clients show."""
    assert isinstance(exc, RequestValidationError)
    errors = [{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
    body: dict[str, object] = {"detail": errors}
    if speaks_openai(request):
        sentence = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors)
        body.update(openai_error(status.HTTP_422_UNPROCESSABLE_CONTENT, sentence))
    return JSONResponse(body, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def redis_unreachable(_: Request, exc: Exception) -> Response:
    """Redis down or restarting: 503 with Retry-After, not a 500 with a traceback."""
    log.warning("Redis unreachable: %s", exc)
    return JSONResponse(
        {"detail": "the gateway cannot reach Redis right now; retry in a few seconds"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "5"},
    )


async def redis_cannot_persist(_: Request, exc: Exception) -> Response:
    """Redis refuses writes it cannot save (its disk is full): 503 naming the cause, for the operator."""
    log.warning("Redis cannot persist writes: %s", exc)
    return JSONResponse(
        {
            "detail": "Redis cannot write to its disk (full or not writable), so the gateway cannot "
            "serve requests now. Free space on Redis's volume, then retry"
        },
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": "30"},
    )


async def http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's handler, except that a 405 lists in ``Allow`` the methods of every route of the path."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        methods = sorted(
            {
                method
                for route in request.app.router.routes
                if route.matches(request.scope)[0] is not Match.NONE
                for method in getattr(route, "methods", None) or ()
            }
        )
        exc.headers = {**(exc.headers or {}), "Allow": ", ".join(methods)}
    if speaks_openai(request):
        body = {"detail": exc.detail, **openai_error(exc.status_code, str(exc.detail))}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
    return await http_exception_handler(request, exc)
