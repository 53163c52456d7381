"""The checkpoint: per thread uuid, the hash of what was last written and where.

It lives in the export folder (so it always describes the files beside it) and is replaced
atomically, so a run killed at any moment leaves either the old or the new checkpoint, never a
torn one; the next run resumes from whatever was saved.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from services.scraper.models import Thread

CHECKPOINT_NAME = ".hindsight-checkpoint.json"
log = logging.getLogger(__name__)


def content_hash(thread: Thread) -> str:
    """SHA-256 hex of the thread's compact JSON with keys sorted at every depth.

    It covers the normalised thread (what the Markdown is rendered from), so volatile fields of the
    raw response (view counts, tokens) do not cause re-renders, and a scraped and an imported copy
    of the same content hash alike.
    """
    canonical = json.dumps(
        thread.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def thread_identity(thread: Thread) -> str:
    """What a scraped and an imported copy of one thread share: the first question, as written
    (case and spacing aside). Imports carry no Perplexity uuid to match on."""
    first = thread.turns[0].question if thread.turns else thread.title
    return " ".join(first.casefold().split())


class ThreadRecord(BaseModel):
    hash: str
    path: str
    listing: str = ""
    identity: str = ""
    imported: bool = False
    format: int = Field(default=1, description="the MARKDOWN_FORMAT the file was rendered in")


class Checkpoint(BaseModel):
    version: int = 1
    threads: dict[str, ThreadRecord] = Field(default_factory=dict)
    gone: dict[str, str] = Field(default_factory=dict, description="uuid -> listing when found gone")


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CheckpointStore:
    """Loads, updates and atomically saves the checkpoint of one export folder."""

    def __init__(self, export_dir: Path) -> None:
        self.path = export_dir / CHECKPOINT_NAME
        self.data = self._load()

    def _load(self) -> Checkpoint:
        if not self.path.exists():
            return Checkpoint()
        try:
            return Checkpoint.model_validate_json(self.path.read_bytes())
        except (ValidationError, ValueError):
            broken = self.path.with_suffix(".corrupt")
            self.path.replace(broken)
            log.warning("checkpoint %s was unreadable; moved to %s and starting afresh", self.path, broken)
            return Checkpoint()

    def get(self, uuid: str) -> ThreadRecord | None:
        return self.data.threads.get(uuid)

    def put(self, uuid: str, record: ThreadRecord) -> None:
        self.data.threads[uuid] = record

    def same_thread(self, identity: str, uuid: str) -> str | None:
        """The uuid of the one other record with this identity (``None`` when none, or ambiguous)."""
        matches = [
            u for u, rec in self.data.threads.items() if u != uuid and identity and rec.identity == identity
        ]
        return matches[0] if len(matches) == 1 else None

    def owner_of(self, relpath: str) -> str | None:
        """The uuid whose file is at ``relpath``, if any (keeps file names unique)."""
        return next((uuid for uuid, rec in self.data.threads.items() if rec.path == relpath), None)

    def save(self) -> None:
        write_atomic(self.path, self.data.model_dump_json(indent=2).encode("utf-8"))
