"""File names that are safe on Linux, macOS and Windows, stable across runs and unique.

``<space>/<title> (<id>).md``: the id (the slug's trailing id, else the uuid) keeps two threads
with the same title apart and stays the same from run to run; titles are cut to 80 UTF-8 bytes so
the whole path stays far below every platform's limits.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from services.scraper.models import Thread
from shared.file_names import safe_component

_SLUG_ID = re.compile(r"[-_]([A-Za-z0-9_.]{8,})$")
MAX_ID_BYTES = 40


def thread_id(thread: Thread) -> str:
    """The slug's trailing id (short, what the URL shows), else the uuid."""
    match = _SLUG_ID.search(thread.slug or "")
    raw = match.group(1) if match else thread.uuid
    return safe_component(raw, MAX_ID_BYTES, fallback=thread.uuid[:MAX_ID_BYTES]).replace(" ", "_")


def thread_relpath(thread: Thread, *, unique_id: bool = False) -> PurePosixPath:
    """Where a thread's Markdown goes, relative to the export folder (``unique_id`` uses the uuid)."""
    ident = safe_component(thread.uuid, MAX_ID_BYTES) if unique_id else thread_id(thread)
    name = f"{safe_component(thread.title)} ({ident}).md"
    return PurePosixPath(safe_component(thread.space, fallback="General")) / name
