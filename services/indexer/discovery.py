"""Find the files under a root that the indexer should read, and say why it skips every other one.

Walks with folder descriptors (``os.fwalk``) down to ``max_depth`` folders below the root, never into
folder symlinks (a link back to a parent cannot loop, a link swapped in cannot lead out); symlinked files
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
import stat
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


def unlistable(exc: OSError) -> None:
    raise UnlistableFolderError(f"cannot list {exc.filename}: {exc.strerror or exc}") from exc


def is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def discover(root: Path, allowed: Sequence[Path], max_bytes: int, max_depth: int = 64) -> Discovery:
    """Indexable files under ``root`` (sorted), the skipped ones with their reasons, and the folders
    not looked into. Raises :class:`UnlistableFolderError` when a folder cannot be listed.

    The walk holds each folder open (``os.fwalk``) and reads its entries through that descriptor; it
    enters a subfolder only if the folder it opened is the one it listed (same device and inode), so a
    subfolder swapped for a link while the walk runs is not entered either. Such a folder, like a
    symlinked one, is reported and counted as unseen: its documents stay in the index."""
    found = Discovery()
    allowed_roots = [Path(a) for a in allowed] or [root]
    expected = {root}
    for top, folders, names, dir_fd in os.fwalk(root, onerror=unlistable, follow_symlinks=False):
        folder = Path(top)
        expected.discard(folder)
        folders[:] = subfolders(
            folder, folders, dir_fd, len(folder.relative_to(root).parts), max_depth, found
        )
        expected.update(folder / name for name in folders)
        for name in sorted(names):
            if not name.startswith("."):
                consider(folder / name, dir_fd, allowed_roots, max_bytes, found)
    if root in expected:
        raise UnlistableFolderError(f"{root} changed while it was read (replaced by a link?): not read")
    for folder in sorted(expected):
        found.unseen.append(folder)
        found.skip(folder, "folder replaced (by a link?) while it was read: not followed")
    found.files.sort()
    return found


def subfolders(
    folder: Path, names: list[str], dir_fd: int, depth: int, max_depth: int, found: Discovery
) -> list[str]:
    """The subfolders of ``folder`` to walk into; hidden, symlinked and too-deep ones are unseen."""
    kept = []
    for name in sorted(names):
        path = folder / name
        if name.startswith("."):
            found.unseen.append(path)
        elif is_link(name, dir_fd):
            found.unseen.append(path)
            found.skip(path, "symlinked folder not followed (it could loop or leave the root)")
        elif depth + 1 > max_depth:
            found.unseen.append(path)
            found.skip(path, f"folder more than {max_depth} levels deep: not read")
        else:
            kept.append(name)
    return kept


def consider(path: Path, dir_fd: int, allowed: Sequence[Path], max_bytes: int, found: Discovery) -> None:
    """Add ``path`` (an entry of the folder open as ``dir_fd``) to the files, or skip it saying why."""
    if is_link(path.name, dir_fd):
        found.skip(path, symlink_problem(path, allowed))
        return
    try:
        kind_for(path)
        with open_regular_file(path, max_bytes, allowed, dir_fd) as handle:
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
