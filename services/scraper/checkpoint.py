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
import re
import tempfile
import uuid as uuids
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from services.scraper.models import Thread

CHECKPOINT_NAME = ".hindsight-checkpoint.json"
_NAMESPACE = uuids.UUID("8a3c5f6e-2b1d-4e0f-9a7b-5c4d3e2f1a0b")
# How much of the first answer tells two threads with the same first question apart.
FINGERPRINT_WORDS = 60
# Two copies of one thread were started within this many seconds of each other (zones and the
# export's rounding aside); a repeated prompt a week or a year later is another thread.
SAME_THREAD_WITHIN_S = 36 * 3600
_CITATION_MARKER = re.compile(r"\[\^?\d+(?:_\d+)?\]")
_WORD = re.compile(r"\w+")
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


def stable_uuid(*parts: str) -> str:
    """A uuid that stays the same for the same input, for threads whose export carries none."""
    return str(uuids.uuid5(_NAMESPACE, "\x1f".join(parts)))


def thread_identity(thread: Thread) -> str:
    """What a scraped and an imported copy of one thread share, since imports carry no Perplexity
    uuid to match on: the first question and the words of the first answer's opening (case,
    punctuation, citation markers and math delimiters aside, which each format writes its own way).
    The same prompt asked twice (a scheduled task, a retry) has another answer, so another identity;
    the rare identical answer is told apart by its date (:meth:`CheckpointStore.same_thread`)."""
    first = thread.turns[0] if thread.turns else None
    question = " ".join((first.question if first else thread.title).casefold().split())
    words = _WORD.findall(_CITATION_MARKER.sub(" ", first.answer if first else "").casefold())
    return f"{question}\x1f{' '.join(words[:FINGERPRINT_WORDS])}"


class ThreadRecord(BaseModel):
    hash: str
    path: str
    listing: str = ""
    identity: str = ""
    imported: bool = False
    created: datetime | None = None
    origins: list[str] = Field(default_factory=list, description="scraped, imported: every way it came in")
    site_turns: int | None = Field(default=None, description="the listing's query_count when scraped")
    site_complete: bool | None = Field(default=None, description="the last page said has_next_page false")
    format: int = Field(default=1, description="the MARKDOWN_FORMAT the file was rendered in")


class Checkpoint(BaseModel):
    version: int = 1
    threads: dict[str, ThreadRecord] = Field(default_factory=dict)
    spaces: dict[str, str] = Field(default_factory=dict, description="space uuid -> title, as scraped")
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

    def same_thread(self, identity: str, uuid: str, created: datetime | None) -> str | None:
        """The uuid of the one other record of this thread: same identity and, where both dates are
        known, started within :data:`SAME_THREAD_WITHIN_S` (``None`` when none, or ambiguous)."""
        matches = [
            u
            for u, rec in self.data.threads.items()
            if u != uuid
            and identity
            and rec.identity == identity
            and (
                rec.created is None
                or created is None
                or abs((rec.created - created).total_seconds()) <= SAME_THREAD_WITHIN_S
            )
        ]
        return matches[0] if len(matches) == 1 else None

    def owner_of(self, relpath: str) -> str | None:
        """The uuid whose file is at ``relpath``, if any (keeps file names unique)."""
        return next((uuid for uuid, rec in self.data.threads.items() if rec.path == relpath), None)

    def save(self) -> None:
        write_atomic(self.path, self.data.model_dump_json(indent=2).encode("utf-8"))
