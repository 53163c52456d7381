"""Index jobs as the gateway and the indexer both see them: path confinement, live progress, watched roots.

Confinement: a path is indexed or read only inside a *root*. The roots are ``HINDSIGHT_ROOTS`` plus
the folders ``hindsight index`` registered (``roots.txt`` in the data folder, mode 0600: adding one
needs the machine owner's files, not just an API key). A registered root is pinned to the device and
inode it had when registered: whoever can rename its parent cannot put another folder, or a link to
one, in its place (``mv team team.old; ln -s /elsewhere team``): such a root is refused, with why.
With no root at all nothing is allowed; ``/`` is never a root, and nothing under ``/proc``, ``/sys``
or ``/dev`` is ever allowed.

The indexer writes a job's progress to a Redis hash as each file finishes; the gateway reads it for
``GET /v1/index/{job}`` without importing indexer code. A job the gateway cancelled has a key the
indexer checks before each batch (:func:`cancel_requested`). Watched roots live in Redis too, so that the
gateway can register a folder and the indexer's watcher picks it up.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import redis
from pydantic import BaseModel

from shared.contracts import IndexFileResult, IndexProgress, WatchedRoot
from shared.events import redis_client
from shared.redis_keys import (
    WATCHED_ROOTS_KEY,
    index_cancelled_key,
    index_progress_key,
    index_recorded_key,
)
from shared.safe_files import write_private
from shared.settings import IndexingSettings, get_settings

SYSTEM_FOLDERS = (Path("/proc"), Path("/sys"), Path("/dev"))


class PathOutsideRootsError(ValueError):
    """A path that is not inside any configured root: refused, never read."""


def refuse_system_folder(path: Path, shown: Path | None = None) -> None:
    """``/`` as a whole, and anything under ``/proc``, ``/sys`` or ``/dev``, are never roots or read.
    The refusal names ``shown`` (the path as asked, of which ``path`` is the resolved form) when
    given: where a link leads is not the asker's to learn."""
    if path == Path("/") or any(path.is_relative_to(folder) for folder in SYSTEM_FOLDERS):
        raise PathOutsideRootsError(
            f"{shown or path} is a system folder: Hindsight never indexes or reads it"
        )


class RegisteredRoot(BaseModel):
    """A folder ``hindsight index`` registered, pinned by the identity it had then: its device and
    inode (``None`` for a line of a roots file written before roots were pinned)."""

    path: Path
    device: int | None = None
    inode: int | None = None

    def line(self) -> str:
        return f"{self.device} {self.inode} {self.path}\n"

    def problem(self) -> str | None:
        """Why the folder at ``path`` is no longer the one registered, or ``None`` when it is."""
        try:
            info = os.stat(self.path, follow_symlinks=False)
        except OSError as exc:
            return f"cannot be looked up ({exc.strerror or exc})"
        if stat.S_ISLNK(info.st_mode):
            return "is now a symbolic link"
        if not stat.S_ISDIR(info.st_mode):
            return "is no longer a folder"
        if self.device is not None and (info.st_dev, info.st_ino) != (self.device, self.inode):
            return "is another folder than the one registered (it was moved or replaced)"
        return None

    def refusal(self) -> str | None:
        problem = self.problem()
        if problem is None:
            return None
        return (
            f"{self.path} {problem} since `hindsight index` registered it: refused. If you moved or "
            f"replaced it yourself, `hindsight index --re-register {self.path}` registers it again"
        )


def parse_root(line: str) -> RegisteredRoot:
    """``device inode path`` (or a bare path, as older roots files hold)."""
    device, _, rest = line.partition(" ")
    inode, _, path = rest.partition(" ")
    if device.isdigit() and inode.isdigit() and path:
        return RegisteredRoot(path=Path(path), device=int(device), inode=int(inode))
    return RegisteredRoot(path=Path(line))


def registered_roots(roots_file: Path) -> list[RegisteredRoot]:
    """The folders ``register_root`` kept in ``roots_file`` (none when it does not exist)."""
    try:
        lines = roots_file.read_text().splitlines()
    except FileNotFoundError:
        return []
    return [parse_root(line) for line in lines if line.strip()]


def register_root(roots_file: Path, folder: Path, again: bool = False) -> Path:
    """Make ``folder`` (resolved, an existing folder, not a system one) a root pinned to its device
    and inode in ``roots_file``; return it. A folder at or under a registered root that was replaced
    since is refused with the reason, unless ``again`` (the user moved or replaced it and says so):
    then it is pinned anew."""
    asked = folder.expanduser().absolute()
    resolved = asked.resolve()
    refuse_system_folder(resolved)
    if "\n" in str(resolved) or not resolved.is_dir():
        raise PathOutsideRootsError(f"{asked} is not a folder")
    refused = {
        path: reason for path, reason in refused_roots(roots_file).items() if asked.is_relative_to(path)
    }
    if refused and not again:
        raise PathOutsideRootsError(next(iter(refused.values())))
    info = resolved.stat()
    pinned = RegisteredRoot(path=resolved, device=info.st_dev, inode=info.st_ino)
    replaced = {resolved, *refused}
    known = [root for root in registered_roots(roots_file) if root.path not in replaced]
    write_private(roots_file, "".join(root.line() for root in [*known, pinned]))
    return resolved


def allowed_roots(settings: IndexingSettings, roots_file: Path) -> list[Path]:
    """``HINDSIGHT_ROOTS`` (resolved) and the roots registered in ``roots_file`` that are still the
    folders registered; system folders never among them."""
    registered = [root.path for root in registered_roots(roots_file) if root.problem() is None]
    roots = [*(root.resolve() for root in settings.roots), *registered]
    return [root for root in dict.fromkeys(roots) if not is_system_folder(root)]


def refused_roots(roots_file: Path) -> dict[Path, str]:
    """The roots registered in ``roots_file`` that were replaced (or moved, or linked) since, with why
    each is refused."""
    refusals = {root.path: root.refusal() for root in registered_roots(roots_file)}
    return {path: reason for path, reason in refusals.items() if reason}


def is_system_folder(path: Path) -> bool:
    try:
        refuse_system_folder(path)
    except PathOutsideRootsError:
        return True
    return False


def confine_to_roots(path: Path, roots: list[Path], refused: Mapping[Path, str] | None = None) -> Path:
    """The resolved path if it lies inside one of ``roots``; with no roots, nothing is inside. A path
    under one of the ``refused`` roots is refused with that root's reason. A refusal names the path
    as given, never where it resolves to (that would tell a client where links lead)."""
    for root, reason in (refused or {}).items():
        if path.absolute().is_relative_to(root):
            raise PathOutsideRootsError(reason)
    resolved = path.resolve()
    refuse_system_folder(resolved, shown=path)
    if not roots:
        raise PathOutsideRootsError(
            f"{path} is outside the configured roots: none are set. `hindsight index <folder>` adds "
            "its folder, or set HINDSIGHT_ROOTS"
        )
    if not any(resolved.is_relative_to(root) for root in roots):
        raise PathOutsideRootsError(
            f"{path} is outside the configured roots (HINDSIGHT_ROOTS and the folders "
            "`hindsight index` registered)"
        )
    return resolved


# Counts a file only the first time it is recorded in a job, atomically: a batch redelivered after
# its worker died records its files again, and they must not be counted twice.
RECORD_ONCE = """
local first = redis.call('SADD', KEYS[2], ARGV[1])
if first == 1 then
  redis.call('HINCRBY', KEYS[1], 'done', 1)
  redis.call('HINCRBY', KEYS[1], 'failed', ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'chunks', ARGV[3])
  redis.call('HINCRBY', KEYS[1], 'done_bytes', ARGV[5])
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
redis.call('HSET', KEYS[1], 'current', ARGV[1])
return first
"""


class ProgressTracker:
    """Counters of one job in a Redis hash; safe to update from many workers at once, and each file
    counts once however often it is recorded."""

    def __init__(self, job_id: str, client: redis.Redis | None = None) -> None:
        self.job_id = job_id
        self._client = client or redis_client()
        self._key = index_progress_key(job_id)
        self._recorded = index_recorded_key(job_id)

    def start(self, total: int, total_bytes: int) -> IndexProgress:
        """Reset the counters for ``total`` files of ``total_bytes`` bytes on disk."""
        pipe = self._client.pipeline()
        pipe.hset(
            self._key,
            mapping={"total": total, "total_bytes": total_bytes, "done": 0, "done_bytes": 0, "failed": 0},
        )
        pipe.hset(self._key, mapping={"chunks": 0, "t0": time.time()})
        pipe.hdel(self._key, "t1")
        pipe.expire(self._key, index_progress_key.lifetime.ttl_s(get_settings().tasks))
        pipe.delete(self._recorded)
        pipe.execute()
        return self.read() or IndexProgress(job_id=self.job_id, total=total, total_bytes=total_bytes)

    def working(self) -> None:
        """Mark when the job's first batch began indexing, its worker's model loaded: the rates count
        from then (only the first call of a job counts)."""
        self._client.hsetnx(self._key, "t1", time.time())

    def record(self, result: IndexFileResult, size_bytes: int) -> IndexProgress:
        """Count the file's result (and its ``size_bytes`` on disk), unless this job already counted it."""
        failed, ttl = int(result.status == "failed"), index_recorded_key.lifetime.ttl_s(get_settings().tasks)
        self._client.eval(
            RECORD_ONCE, 2, self._key, self._recorded, result.path, failed, result.chunks, ttl, size_bytes
        )
        return self.read() or IndexProgress(job_id=self.job_id)

    def read(self) -> IndexProgress | None:
        return read_progress(self.job_id, self._client)


def read_progress(job_id: str, client: redis.Redis | None = None) -> IndexProgress | None:
    """The job's progress now (:func:`progress_from`), or ``None`` for a job with no counters."""
    raw = (client or redis_client()).hgetall(index_progress_key(job_id))  # decoded: str to str
    return progress_from(job_id, cast("dict[str, str]", raw), time.time()) if raw else None


def progress_from(job_id: str, counters: Mapping[str, str], now: float) -> IndexProgress:
    """The job's progress at ``now`` from its counters, with its rates and the time left.

    Rates count bytes on disk, not files: a batch of small files finishes at once, and its files
    done in one instant made the rate read thousands of files a second. Both rates are measured
    over the job since ``t1``, when its first batch began (its worker's model already loaded, so a
    10 s model load does not make the first ETAs read many times too long; a worker that starts later
    loads its model inside the measure), and a file counts only once its batch is written, so the
    time its batch took is inside the measure (the indexer counts a batch whole before its files'
    events). The ETA is the bytes left at the byte rate; before any file is done there is none.
    """
    total, done = int(counters.get("total", 0)), int(counters.get("done", 0))
    total_bytes, done_bytes = int(counters.get("total_bytes", 0)), int(counters.get("done_bytes", 0))
    started = float(counters.get("t0", now))
    working_s = now - float(counters.get("t1", now))
    measured = done > 0 and working_s > 0
    bytes_rate = done_bytes / working_s if measured else 0.0
    files_rate = done / working_s if measured else 0.0
    eta = (total_bytes - done_bytes) / bytes_rate if bytes_rate > 0 else None
    return IndexProgress(
        job_id=job_id,
        total=total,
        done=done,
        total_bytes=total_bytes,
        done_bytes=done_bytes,
        failed=int(counters.get("failed", 0)),
        chunks=int(counters.get("chunks", 0)),
        current=counters.get("current"),
        rate_files_per_s=round(files_rate, 3),
        rate_bytes_per_s=round(bytes_rate, 1),
        eta_s=round(max(eta, 0.0), 1) if eta is not None else None,
        elapsed_s=round(max(now - started, 1e-6), 3),
    )


def cancel_requested(job_id: str, client: redis.Redis | None = None) -> bool:
    """Whether ``DELETE /v1/index/{job_id}`` cancelled the job."""
    return bool((client or redis_client()).exists(index_cancelled_key(job_id)))


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
