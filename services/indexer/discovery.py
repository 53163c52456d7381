"""Find the files under a root that the indexer should read, and say why it skips every other one.

Walks iteratively (no recursion, so any depth of folders is safe) down to ``max_depth`` folders
below the root, never into folder symlinks (a link back to a parent cannot loop); symlinked files
are not followed either, since the safe open refuses them (``shared.safe_files``), and the
reason says whether the link was broken, a loop or led outside the roots. Refuses unknown types,
empty files, FIFOs and other non-regular files, files over the size limit (before reading them) and
binary content behind a text extension (from its first bytes). Hidden files and folders (``.git``,
``.obsidian``) are passed over silently: they are not content.

A folder that cannot be listed fails the walk (:class:`UnlistableFolderError`): treating its files
as gone would delete them from the index. ``unseen`` says which parts of the root the walk did not
look into (hidden and too-deep folders), so the scan never deletes documents from them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from services.indexer.loaders import SNIFF_BYTES, SkippedFileError, kind_for, refused, sniff_text_file
from shared.contracts import IndexFileResult
from shared.safe_files import RefusedFileError, open_regular_file


class UnlistableFolderError(OSError):
    """A folder under the root could not be listed: the scan fails instead of deleting its files."""


@dataclass
class Discovery:
    files: list[Path] = field(default_factory=list)
    skipped: list[IndexFileResult] = field(default_factory=list)
    # Folders the walk did not look into (hidden, or deeper than the cap): their documents stay.
    unseen: list[Path] = field(default_factory=list)

    def skip(self, path: Path, reason: str) -> None:
        self.skipped.append(IndexFileResult(path=str(path), status="skipped", reason=reason))


def symlink_problem(path: Path, allowed: Sequence[Path]) -> str:
    """Why a file symlink is not indexed: broken, a loop, outside the roots, or links are not followed."""
    try:
        target = path.resolve(strict=True)
    except RuntimeError:
        return "symlink loop"
    except OSError as exc:
        return f"broken symlink ({exc.strerror or exc})"
    if not any(target.is_relative_to(root) for root in allowed):
        return f"symlink points outside the configured roots, to {target}"
    return f"symlink not followed: index its target {target} where it lies"


def listing(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError as exc:
        raise UnlistableFolderError(f"cannot list {folder}: {exc.strerror or exc}") from exc


def discover(root: Path, allowed: Sequence[Path], max_bytes: int, max_depth: int = 64) -> Discovery:
    """Indexable files under ``root`` (sorted), the skipped ones with their reasons, and the folders
    not looked into. Raises :class:`UnlistableFolderError` when a folder cannot be listed."""
    found = Discovery()
    allowed_resolved = [a.resolve() for a in allowed] or [root.resolve()]
    pending: list[tuple[Path, int]] = [(root, 0)]
    while pending:
        folder, depth = pending.pop()
        for entry in listing(folder):
            path = Path(entry.path)
            if entry.name.startswith("."):
                if entry.is_dir(follow_symlinks=False):
                    found.unseen.append(path)
            elif entry.is_symlink() and path.is_dir():  # Path.is_dir: a link loop is not a folder
                found.skip(path, "symlinked folder not followed (it could loop or leave the root)")
            elif entry.is_dir(follow_symlinks=False):
                if depth + 1 > max_depth:
                    found.unseen.append(path)
                    found.skip(path, f"folder more than {max_depth} levels deep: not read")
                else:
                    pending.append((path, depth + 1))
            else:
                consider(path, allowed_resolved, max_bytes, found)
    found.files.sort()
    return found


def consider(path: Path, allowed: Sequence[Path], max_bytes: int, found: Discovery) -> None:
    if path.is_symlink():
        found.skip(path, symlink_problem(path, allowed))
        return
    try:
        kind_for(path)
        with open_regular_file(path, max_bytes, allowed) as handle:
            head = handle.read(SNIFF_BYTES)
        if not head:
            raise SkippedFileError("empty file (0 bytes)")
        sniff_text_file(path, head)
    except RefusedFileError as exc:
        found.skip(path, str(refused(exc)))
        return
    except SkippedFileError as exc:
        found.skip(path, str(exc))
        return
    except OSError as exc:
        found.skip(path, f"cannot read: {exc.strerror or exc}")
        return
    found.files.append(path)
