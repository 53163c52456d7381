"""Limits that keep one caller or one burst from degrading the service for everyone.

- request bodies larger than ``max_request_bytes`` get 413 before they are parsed, and JSON bodies
  whose strings are not Unicode text (a lone surrogate such as ``"\\ud800"``, which Python's JSON
  parser lets through and nothing after it can encode) get 422;
- each caller gets ``rate_limit_per_minute`` requests per clock minute (429 + Retry-After), and a
  budget of its own for reads (``read_rate_limit_per_minute``: status polls, answers, streams);
- backpressure: when the Celery queues behind an endpoint already hold more than
  ``backpressure_max_queued`` messages, new work gets 429 + Retry-After at once instead of
  joining a queue whose latency would grow without bound.
"""

from __future__ import annotations

import json
import time

import redis.asyncio as aioredis
from fastapi import HTTPException, Request, status
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.metrics import record_rejection
from shared.redis_keys import rate_key
from shared.settings import GatewaySettings, TaskSettings
from shared.topology import QUEUES, Queue


def too_many(request: Request, reason: str, detail: str, retry_after_s: int) -> HTTPException:
    record_rejection(request, reason)
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS, detail, headers={"Retry-After": str(max(1, retry_after_s))}
    )


READS = ("GET", "HEAD")


def rate_budget(request: Request, settings: GatewaySettings) -> tuple[str, int, str]:
    """The budget a request counts against: reads (status polls, answers, streams) have their own,
    so a page polling a job's status never uses up the key's questions, searches and index runs."""
    if request.method in READS:
        return "reads", settings.read_rate_limit_per_minute, "reads"
    return "work", settings.rate_limit_per_minute, "requests"


async def enforce_rate_limit(
    request: Request, client: aioredis.Redis, caller: str, settings: GatewaySettings, tasks: TaskSettings
) -> None:
    """Fixed one-minute windows counted in Redis, so every gateway replica shares one budget."""
    budget, per_minute, what = rate_budget(request, settings)
    now = time.time()
    window = int(now // 60)
    key = rate_key(caller, budget, window)
    pipe = client.pipeline()
    pipe.incr(key)
    pipe.expire(key, rate_key.lifetime.ttl_s(tasks))
    count, _ = await pipe.execute()
    if int(count) > per_minute:
        retry_after = int((window + 1) * 60 - now) + 1
        raise too_many(request, "rate", f"rate limit: {per_minute} {what} a minute for this key", retry_after)


async def queue_depths(client: aioredis.Redis) -> dict[str, int]:
    """Messages waiting in each Celery queue: the length of the queue's Redis list."""
    pipe = client.pipeline()
    for queue in QUEUES:
        pipe.llen(queue)
    return {queue: int(depth) for queue, depth in zip(QUEUES, await pipe.execute(), strict=True)}


async def enforce_backpressure(
    request: Request, client: aioredis.Redis, queues: tuple[Queue, ...], settings: GatewaySettings
) -> None:
    depths = await queue_depths(client)
    waiting = sum(depths[q] for q in queues)
    bound = settings.backpressure_max_queued
    if waiting > bound:
        raise too_many(
            request,
            "backpressure",
            f"busy: {waiting} tasks already queued ({', '.join(queues)}; limit {bound}); retry later",
            settings.backpressure_retry_after_s,
        )


def json_body_problem(body: bytes) -> str | None:
    """Why a JSON body is refused before any route parses it: bytes that are not UTF-8, strings that
    are not Unicode, or nesting deeper than the parser recurses. Otherwise ``None`` (unparsable JSON
    is the route's 422)."""
    try:
        json.dumps(json.loads(body), ensure_ascii=False).encode("utf-8")
    except UnicodeDecodeError:
        return "the body is not UTF-8 text"
    except UnicodeEncodeError:
        return LONE_SURROGATE
    except RecursionError:
        return "the body nests arrays or objects too deeply"
    except ValueError:
        return None
    return None


class RequestBodyGuard:
    """ASGI middleware: refuse bodies over ``max_bytes`` with 413, by header or by counting the stream,
    and JSON bodies :func:`json_body_problem` finds wrong with 422."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self.refuse(scope, send, int(declared))
            return
        body, more = b"", True
        messages: list[Message] = []
        while more:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            more = message.get("more_body", False) and message["type"] == "http.request"
            if len(body) > self.max_bytes:
                await self.refuse(scope, send, len(body))
                return

        problem = json_body_problem(body) if body else None
        if problem:
            detail = [{"type": "value_error", "loc": ["body"], "msg": problem}]
            await refuse(send, status.HTTP_422_UNPROCESSABLE_CONTENT, detail)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    async def refuse(self, scope: Scope, send: Send, size: int) -> None:
        detail = f"request body of {size} bytes is over the limit of {self.max_bytes} bytes"
        await refuse(send, status.HTTP_413_REQUEST_ENTITY_TOO_LARGE, detail)


LONE_SURROGATE = "the body holds a string with a lone surrogate (such as \\ud800): not Unicode text"


async def refuse(send: Send, status_code: int, detail: object) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status_code,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
