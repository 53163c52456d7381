"""The reranker's status in Redis, so /healthz can say whether it scores or passes through.

Each worker process writes ``reranker_status_key(<hostname>)`` (JSON of :class:`RerankerStatus`)
every ``reranker_heartbeat_s`` with a TTL of three beats: a dead worker's entry disappears on its
own. The gateway lists the keys; it never imports this service.
"""

from __future__ import annotations

import contextlib
import socket
import threading

import redis

from shared.contracts import RerankerStatus
from shared.redis_keys import reranker_status_key as status_key


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
