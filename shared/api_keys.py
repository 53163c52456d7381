"""API keys, kept hashed in a file in the data folder.

A key is ``hs_<id>_<secret>`` where the secret is 256 random bits. Only the SHA-256 of the whole key
is stored: a fast hash is enough because a 256-bit random secret cannot be guessed or brute-forced
from its hash (slow KDFs such as scrypt exist to protect low-entropy passwords), and it keeps every
request's check to one hash. The ``id`` part lets the gateway find the record without scanning and
lets people list and revoke keys by a name that is not a secret.

The file (mode 0600) lives beside the data it protects, survives Redis restarts, and is re-read when
it changes, so ``hindsight keys revoke`` takes effect on the running gateway at once.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

from pydantic import BaseModel, Field

KEY_PREFIX = "hs"


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
        self._cached: tuple[float, KeyFileContent] | None = None

    def load(self) -> KeyFileContent:
        """The file's content, re-read only when its modification time changed."""
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return KeyFileContent()
        if self._cached is None or self._cached[0] != mtime:
            self._cached = (mtime, KeyFileContent.model_validate_json(self.path.read_text()))
        return self._cached[1]

    def save(self, content: KeyFileContent) -> None:
        """Write atomically with owner-only permissions, so a reader never sees half a file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(content.model_dump_json(indent=2))
        os.replace(temporary, self.path)
        self._cached = None

    def create(self, name: str) -> tuple[ApiKeyRecord, str]:
        """A new key; the plaintext is returned once and never stored."""
        key_id = secrets.token_hex(4)
        key = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKeyRecord(id=key_id, name=name, sha256=digest(key))
        content = self.load().model_copy(deep=True)
        content.keys.append(record)
        self.save(content)
        return record, key

    def list(self) -> list[ApiKeyRecord]:
        return list(self.load().keys)

    def revoke(self, key_id: str) -> ApiKeyRecord:
        content = self.load().model_copy(deep=True)
        for record in content.keys:
            if record.id == key_id:
                record.revoked_at = record.revoked_at or time.time()
                self.save(content)
                return record
        raise KeyError(f"no key with id {key_id}")

    def check(self, key: str) -> KeyCheck:
        key_id = key_id_of(key)
        record = next((r for r in self.load().keys if r.id == key_id), None)
        if record is None or not hmac.compare_digest(record.sha256, digest(key)):
            return KeyCheck(reason="unknown API key")
        if record.revoked:
            return KeyCheck(reason=f"API key {record.id} was revoked")
        return KeyCheck(record=record)
