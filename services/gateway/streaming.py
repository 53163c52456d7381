"""Server-sent events read from a Redis stream, resumable with ``Last-Event-ID``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import redis.asyncio as aioredis
from fastapi import Request

from shared.events import EVENT_FIELD, StreamReply, decode_entry, events_key

SSE_BLOCK_MS = 15_000


async def stream_events(
    request: Request, client: aioredis.Redis, stream_id: str, terminal_stage: str
) -> AsyncIterator[dict[str, str]]:
    """Every event of the stream in order, ending after the terminal stage's done or failed event."""
    after = request.headers.get("last-event-id", "0-0")
    while not await request.is_disconnected():
        reply = cast(StreamReply, await client.xread({events_key(stream_id): after}, block=SSE_BLOCK_MS))
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
