"""Which queues have a live worker, as the gateway learns it from a broadcast ping of the workers.

``GET /v1/health`` asks at most every few seconds and hands its answer to the census; a question asks
:class:`WorkerCensus`, which answers from its last ping (renewed in the background) so that asking
stays fast, and pings again before it reports a queue without a worker, since a worker may have
started since.
"""

from __future__ import annotations

import asyncio
import time

from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from shared.celery_app import app as celery_app
from shared.topology import QUEUES, WORKERS, Queue

PING_TIMEOUT_S = 1.0
RECHECK_TIMEOUT_S = 2.0


def live_workers_per_queue(timeout_s: float = PING_TIMEOUT_S) -> dict[str, int]:
    """How many live workers consume each queue, from a broadcast ping of the workers; none while the
    broker cannot be reached (a restarting Redis), so that the health says degraded instead of failing."""
    counts = {queue.value: 0 for queue in QUEUES}
    try:
        replies = celery_app.control.inspect(timeout=timeout_s).active_queues() or {}
    except (OSError, RedisError, OperationalError):
        return counts
    for queues in replies.values():
        for queue in queues:
            counts[queue["name"]] = counts.get(queue["name"], 0) + 1
    return counts


def worker_for(queue: Queue) -> str:
    """The name of the worker (``shared.topology.WORKERS``) that consumes ``queue``."""
    return next(w.name for w in WORKERS if queue in w.queues)


class WorkerCensus:
    """Live workers per queue. A question never waits for a ping while the last one (however old)
    found every queue served: an answer older than ``max_age_s`` is used once more while a new ping
    runs in the background. Only the first question, and one that would be refused, wait."""

    def __init__(self, max_age_s: float = 10.0) -> None:
        self.max_age_s = max_age_s
        self._counts: dict[str, int] | None = None
        self._taken_at = float("-inf")
        self._lock = asyncio.Lock()
        self._background: asyncio.Task[dict[str, int]] | None = None

    async def _ping(self, timeout_s: float) -> dict[str, int]:
        async with self._lock:
            self._counts = await asyncio.to_thread(live_workers_per_queue, timeout_s)
            self._taken_at = time.monotonic()
            return self._counts

    def record(self, counts: dict[str, int]) -> None:
        """Take a ping someone else made (``GET /v1/health``'s) as the latest answer."""
        self._counts, self._taken_at = counts, time.monotonic()

    def _refresh_in_background(self) -> None:
        if self._background is None or self._background.done():
            self._background = asyncio.create_task(self._ping(PING_TIMEOUT_S))

    async def without_worker(self, queues: tuple[Queue, ...]) -> list[Queue]:
        """The queues of ``queues`` that no live worker consumes (confirmed by a fresh, longer ping)."""
        counts = self._counts if self._counts is not None else await self._ping(PING_TIMEOUT_S)
        if time.monotonic() - self._taken_at > self.max_age_s:
            self._refresh_in_background()
        if all(counts.get(q) for q in queues):
            return []
        counts = await self._ping(RECHECK_TIMEOUT_S)
        return [q for q in queues if not counts.get(q)]


census = WorkerCensus()


def spoken_list(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"


def no_worker_reason(queues: list[Queue]) -> str:
    """Which stages have no live worker, which workers to start, and how."""
    plural = "s" if len(queues) > 1 else ""
    stages = spoken_list([q.value for q in queues])
    workers = spoken_list([worker_for(q) for q in queues])
    return (
        f"no live worker for the {stages} stage{plural} (the {workers} worker{plural}): start "
        f"{'them' if plural else 'it'} with `hindsight up` (in Docker: `docker compose up -d`); "
        "`hindsight status` shows what runs"
    )
