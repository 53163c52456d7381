"""Folders named in requests: absolute, resolved, and inside the configured roots, or a 422 saying why."""

from __future__ import annotations

from pathlib import Path

from fastapi import HTTPException, status

from shared.index_jobs import PathOutsideRootsError, confine_to_roots


def confined_path(raw: str, roots: list[Path]) -> Path:
    """The resolved path, if absolute and inside ``roots`` (anywhere when none are configured)."""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "root must be an absolute path")
    try:
        return confine_to_roots(path, roots)
    except PathOutsideRootsError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
