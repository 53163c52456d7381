"""API keys, kept hashed in a file in the data folder.

A key is ``hs_<id>_<secret>`` where the secret is 256 random bits. Only the SHA-256 of the whole key
is stored: a fast hash is enough because a 256-bit random secret cannot be guessed or brute-forced
from its hash (slow KDFs such as scrypt exist to protect low-entropy passwords), and it keeps every
request's check to one hash. The ``id`` part lets the gateway find the record without scanning and
lets people list and revoke keys by a name that is not a secret.

The file (mode 0600) lives beside the data it protects, survives Redis restarts, and is re-read when
it changes, so ``hindsight keys revoke`` takes effect on the running gateway at once. Every change
(create, revoke) reads, edits and writes the file under an exclusive lock (``flock`` on a ``.lock``
file beside it), through a temporary file of its own that then replaces the file atomically: two
changes at once never lose one another (a revoked key never works again) and no reader ever sees
half a file.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
import secrets
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

KEY_PREFIX = "hs"
LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class ApiKeyRecord(BaseModel):
    id: str
    name: str
    sha256: str
    created_at: float = Field(default_factory=time.time)
    revoked_at: float | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


class KeyFileContent(BaseModel):
    keys: list[ApiKeyRecord] = Field(default_factory=list)


class KeyCheck(BaseModel):
    """The outcome of checking a presented key: the record when it is valid, or why it is not."""

    record: ApiKeyRecord | None = None
    reason: str = ""


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_id_of(key: str) -> str | None:
    prefix, _, rest = key.partition("_")
    key_id, _, secret = rest.partition("_")
    return key_id if prefix == KEY_PREFIX and key_id and secret else None


class KeyFile:
    """Create, list, revoke and verify keys stored in one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cached: tuple[tuple[int, int, int], KeyFileContent] | None = None

    def load(self) -> KeyFileContent:
        """The file's content, re-read only when it was replaced: every save is a new inode, so two
        saves within one tick of the clock (same modification time) are told apart."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return KeyFileContent()
        version = (info.st_ino, info.st_mtime_ns, info.st_size)
        if self._cached is None or self._cached[0] != version:
            self._cached = (version, KeyFileContent.model_validate_json(self.path.read_text()))
        return self._cached[1]

    @contextmanager
    def editing(self) -> Iterator[KeyFileContent]:
        """The file's current content, to edit; written back when the block ends. The whole
        read-edit-write holds the file's lock, so concurrent changes (other processes included)
        apply one after the other."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = os.open(self.path.with_name(self.path.name + ".lock"), LOCK_FLAGS, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._cached = None
            content = self.load().model_copy(deep=True)
            yield content
            self.save(content)
        finally:
            os.close(lock)  # releases the lock

    def save(self, content: KeyFileContent) -> None:
        """Write a unique temporary file (owner-only), flush it to disk and atomically replace the
        file with it, so a reader never sees half a file. Call it under :meth:`editing`'s lock."""
        descriptor, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(content.model_dump_json(indent=2))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        self._cached = None

    def create(self, name: str) -> tuple[ApiKeyRecord, str]:
        """A new key; the plaintext is returned once and never stored."""
        key_id = secrets.token_hex(4)
        key = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKeyRecord(id=key_id, name=name, sha256=digest(key))
        with self.editing() as content:
            content.keys.append(record)
        return record, key

    def list(self) -> list[ApiKeyRecord]:
        return list(self.load().keys)

    def revoke(self, key_id: str) -> ApiKeyRecord:
        with self.editing() as content:
            record = next((r for r in content.keys if r.id == key_id), None)
            if record is None:
                raise KeyError(f"no key with id {key_id}")
            record.revoked_at = record.revoked_at or time.time()
        return record

    def check(self, key: str) -> KeyCheck:
        key_id = key_id_of(key)
        record = next((r for r in self.load().keys if r.id == key_id), None)
        if record is None or not hmac.compare_digest(record.sha256, digest(key)):
            return KeyCheck(reason="unknown API key")
        if record.revoked:
            return KeyCheck(reason=f"API key {record.id} was revoked")
        return KeyCheck(record=record)
