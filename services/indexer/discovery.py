"""Find the files under a root that the indexer should read, and say why it skips every other one.

Walks without following folder symlinks (so a link back to a parent cannot loop), resolves file
symlinks strictly (loops and dangling links are reported), keeps link targets inside the allowed
roots, and refuses unknown types, empty files, files over the size limit (before reading them) and binary
content behind a text extension (from its first bytes).
Hidden files and folders (``.git``, ``.obsidian``) are passed over silently: they are not content.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from services.indexer.loaders import SkippedFileError, check_size, kind_for, sniff_text_file
from shared.contracts import IndexFileResult


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    skipped: list[IndexFileResult] = field(default_factory=list)

    def skip(self, path: Path, reason: str) -> None:
        self.skipped.append(IndexFileResult(path=str(path), status="skipped", reason=reason))


def symlink_problem(path: Path, allowed: list[Path]) -> str | None:
    """Why a file symlink cannot be indexed, or ``None`` when its target is a file inside ``allowed``."""
    try:
        target = path.resolve(strict=True)
    except RuntimeError:
        return "symlink loop"
    except OSError as exc:
        return f"broken symlink ({exc.strerror or exc})"
    if not any(target.is_relative_to(root) for root in allowed):
        return f"symlink points outside the configured roots, to {target}"
    return None


def discover(root: Path, allowed: list[Path], max_bytes: int) -> Discovery:
    """Indexable files under ``root`` (sorted) and the skipped ones with their reasons."""
    found = Discovery()
    allowed_resolved = [a.resolve() for a in allowed] or [root.resolve()]
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(folder)
        for name in sorted(dirnames):
            if not name.startswith(".") and (here / name).is_symlink():
                found.skip(here / name, "symlinked folder not followed (it could loop or leave the root)")
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (here / d).is_symlink())
        for name in sorted(filenames):
            if not name.startswith("."):
                consider(here / name, allowed_resolved, max_bytes, found)
    found.files.sort()
    return found


def consider(path: Path, allowed: list[Path], max_bytes: int, found: Discovery) -> None:
    if path.is_symlink():
        problem = symlink_problem(path, allowed)
        if problem:
            found.skip(path, problem)
            return
    try:
        kind_for(path)
        stat = path.stat()
        if not path.is_file():
            raise SkippedFileError("not a regular file")
        check_size(path, stat.st_size, max_bytes)
        sniff_text_file(path)
    except SkippedFileError as exc:
        found.skip(path, str(exc))
        return
    except OSError as exc:
        found.skip(path, f"cannot read: {exc.strerror or exc}")
        return
    found.files.append(path)
