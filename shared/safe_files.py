"""Open a user's file for reading without being led to another one, blocked, or flooded; write
private files.

Every read of a document (hashing, loading, the gateway's evidence view) goes through
:func:`open_regular_file`, which checks the *open descriptor*, not the path, so a file swapped
after it was listed is caught:

- ``O_NOFOLLOW``: a symlink in the file's place is refused, not followed;
- ``O_NONBLOCK``: a FIFO or device in its place cannot block the open;
- ``fstat``: only a regular file of at most ``max_bytes`` is read;
- with ``roots`` (resolved paths, not resolved again: a root swapped for a link must not move them),
  the file actually opened (``/proc/self/fd``) must lie under one of them, so a folder of its path
  swapped for a symlink cannot lead outside either.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class RefusedFileError(ValueError):
    """The path is not a regular file this process may read (symlink, FIFO, device, outside roots)."""


class FileTooLargeError(RefusedFileError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"file is {size / 1e6:.1f} MB, above the {limit / 1e6:.1f} MB limit")
        self.size, self.limit = size, limit


def opened_path(descriptor: int) -> Path | None:
    """The path the kernel opened for ``descriptor`` (``None`` where ``/proc`` is not mounted)."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{descriptor}"))
    except OSError:
        return None


def check_descriptor(descriptor: int, path: Path, max_bytes: int, roots: Sequence[Path]) -> int:
    """The regular file's size, or why it is refused."""
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        raise RefusedFileError("not a regular file (a FIFO, socket, device or folder)")
    if roots:
        actual = opened_path(descriptor) or path.resolve()
        if not any(actual.is_relative_to(root) for root in roots):
            raise RefusedFileError(f"{actual} is outside the configured roots")
    if info.st_size > max_bytes:
        raise FileTooLargeError(info.st_size, max_bytes)
    return info.st_size


@contextmanager
def open_regular_file(
    path: Path, max_bytes: int, roots: Sequence[Path] = (), dir_fd: int | None = None
) -> Iterator[BinaryIO]:
    """``path`` opened for binary reading, if it is a regular file (not a symlink) of at most
    ``max_bytes`` (and under ``roots`` when given); :class:`RefusedFileError` says why not.
    With ``dir_fd`` (its folder, held open) the file is opened by its name in that folder.
    ``OSError`` (missing, permission denied) passes through."""
    try:
        descriptor = os.open(path if dir_fd is None else path.name, OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise RefusedFileError("a symlink: links are not followed") from exc
        raise
    try:
        check_descriptor(descriptor, path, max_bytes, roots)
        os.set_blocking(descriptor, True)
        handle = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    with handle:
        yield handle


def read_regular_file(path: Path, max_bytes: int, roots: Sequence[Path] = ()) -> bytes:
    """The bytes of ``path`` as :func:`open_regular_file` admits it; never more than ``max_bytes``,
    even when the file grows while it is read."""
    with open_regular_file(path, max_bytes, roots) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLargeError(len(data), max_bytes)
    return data


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600, whatever the umask)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
