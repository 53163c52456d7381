"""The reranker's status in Redis, so /healthz can say whether it scores or passes through.

Each worker process writes ``hindsight:reranker:<hostname>`` (JSON of :class:`RerankerStatus`)
every ``reranker_heartbeat_s`` with a TTL of three beats: a dead worker's entry disappears on its
own. The gateway lists the keys; it never imports this service.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Literal

import redis
from pydantic import BaseModel

STATUS_KEY_PREFIX = "hindsight:reranker:"


class RerankerStatus(BaseModel):
    """What one reranker worker is doing with the questions it receives."""

    worker: str
    mode: Literal["scoring", "pass-through"]
    model: str | None
    detail: str


def status_key(worker: str) -> str:
    return f"{STATUS_KEY_PREFIX}{worker}"


def publish(client: redis.Redis, status: RerankerStatus, ttl_s: float) -> None:
    client.set(status_key(status.worker), status.model_dump_json(), ex=max(1, round(ttl_s)))


def start_heartbeat(client: redis.Redis, status: RerankerStatus, every_s: float) -> threading.Event:
    """Publish now and then every ``every_s`` until the returned event is set."""
    stop = threading.Event()

    def beat() -> None:
        while True:
            with contextlib.suppress(redis.RedisError):  # the broker is down too; the next beat retries
                publish(client, status, ttl_s=3 * every_s)
            if stop.wait(every_s):
                return

    threading.Thread(target=beat, name="reranker-heartbeat", daemon=True).start()
    return stop


def worker_name() -> str:
    return socket.gethostname()
