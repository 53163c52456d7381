"""Index jobs as the gateway and the indexer both see them: path confinement, live progress, watched roots.

The indexer writes a job's progress to a Redis hash as each file finishes; the gateway reads it for
``GET /v1/index/{job}`` without importing indexer code. Watched roots live in Redis too, so that the
gateway can register a folder and the indexer's watcher picks it up.
"""

from __future__ import annotations

import time
from pathlib import Path

import redis

from shared.contracts import IndexFileResult, IndexProgress, WatchedRoot
from shared.events import redis_client
from shared.settings import get_settings

WATCHED_ROOTS_KEY = "hindsight:watch:roots"


class PathOutsideRootsError(ValueError):
    """A path that is not inside any configured root: refused, never read."""


def confine_to_roots(path: Path, roots: list[Path]) -> Path:
    """The resolved path if it lies inside one of ``roots`` (all of them allowed when none are set)."""
    resolved = path.resolve()
    if roots and not any(resolved.is_relative_to(root.resolve()) for root in roots):
        raise PathOutsideRootsError(f"{resolved} is outside the configured roots (HINDSIGHT_ROOTS)")
    return resolved


# KEYS: the progress hash, the set of files counted; ARGV: path, failed (0 or 1), chunks, ttl.
RECORD_ONCE = """
if redis.call('SADD', KEYS[2], ARGV[1]) == 1 then
    redis.call('HINCRBY', KEYS[1], 'done', 1)
    redis.call('HINCRBY', KEYS[1], 'failed', ARGV[2])
    redis.call('HINCRBY', KEYS[1], 'chunks', ARGV[3])
    redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call('HSET', KEYS[1], 'current', ARGV[1])
"""


def progress_key(job_id: str) -> str:
    return f"hindsight:index:{job_id}:progress"


class ProgressTracker:
    """Counters of one job in a Redis hash; safe to update from many workers at once (HINCRBY)."""

    def __init__(self, job_id: str, client: redis.Redis | None = None) -> None:
        self.job_id = job_id
        self._client = client or redis_client()
        self._key = progress_key(job_id)

    def start(self, total: int) -> IndexProgress:
        pipe = self._client.pipeline()
        pipe.hset(self._key, mapping={"total": total, "done": 0, "failed": 0, "chunks": 0, "t0": time.time()})
        pipe.expire(self._key, get_settings().event_ttl_s)
        pipe.execute()
        return self.read() or IndexProgress(job_id=self.job_id, total=total)

    def record(self, result: IndexFileResult) -> IndexProgress:
        """Count the file once, however many times its task runs (a redelivered message runs it again)."""
        self._client.eval(
            RECORD_ONCE,
            2,
            self._key,
            f"{self._key}:files",
            result.path,
            int(result.status == "failed"),
            result.chunks,
            get_settings().event_ttl_s,
        )
        return self.read() or IndexProgress(job_id=self.job_id)

    def read(self) -> IndexProgress | None:
        return read_progress(self.job_id, self._client)


def read_progress(job_id: str, client: redis.Redis | None = None) -> IndexProgress | None:
    """The job's progress with its rate (files/s since the scan) and the time left at that rate."""
    raw = (client or redis_client()).hgetall(progress_key(job_id))
    if not raw:
        return None
    total, done = int(raw.get("total", 0)), int(raw.get("done", 0))
    elapsed = max(time.time() - float(raw.get("t0", time.time())), 1e-6)
    rate = done / elapsed
    return IndexProgress(
        job_id=job_id,
        total=total,
        done=done,
        failed=int(raw.get("failed", 0)),
        chunks=int(raw.get("chunks", 0)),
        current=raw.get("current"),
        rate_files_per_s=round(rate, 3),
        eta_s=round((total - done) / rate, 1) if rate > 0 else None,
        elapsed_s=round(elapsed, 3),
    )


class WatchRegistry:
    """The folders the watcher keeps in sync, keyed by their resolved path."""

    def __init__(self, client: redis.Redis | None = None) -> None:
        self._client = client or redis_client()

    def add(self, root: Path) -> WatchedRoot:
        watched = WatchedRoot(root=str(root))
        self._client.hset(WATCHED_ROOTS_KEY, watched.root, watched.model_dump_json())
        return watched

    def remove(self, root: Path) -> bool:
        return bool(self._client.hdel(WATCHED_ROOTS_KEY, str(root)))

    def list(self) -> list[WatchedRoot]:
        values = self._client.hgetall(WATCHED_ROOTS_KEY).values()
        return sorted((WatchedRoot.model_validate_json(v) for v in values), key=lambda w: w.root)
