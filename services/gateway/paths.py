"""Folders named in requests: resolved, inside the configured roots (403 otherwise) and existing
folders (404 otherwise). That a path is absolute and holds no NUL byte the request schema checks."""

from __future__ import annotations

from pathlib import Path

from fastapi import HTTPException, status

from shared.index_jobs import PathOutsideRootsError, allowed_roots, confine_to_roots, refused_roots
from shared.settings import IndexingSettings


def confined_folder(raw: str, settings: IndexingSettings, roots_file: Path) -> Path:
    """The resolved folder, if inside the allowed roots (``HINDSIGHT_ROOTS`` and those registered in
    ``roots_file``) and a folder that exists; else 403 (naming the path as asked, never where it
    resolves to; ``~name`` of no user is outside every root) or 404 saying why."""
    try:
        path = Path(raw).expanduser()
    except RuntimeError as exc:  # "~name" of no user: nothing it names can be inside the roots
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"{raw} starts with the home folder of no user of this machine: it is outside the "
            "configured roots",
        ) from exc
    try:
        folder = confine_to_roots(path, allowed_roots(settings, roots_file), refused_roots(roots_file))
    except PathOutsideRootsError as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from exc
    if not is_folder(folder):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no folder at {folder}")
    return folder


def is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; a path the system cannot even look up (too long) is not."""
    try:
        return path.is_dir()
    except OSError:
        return False
