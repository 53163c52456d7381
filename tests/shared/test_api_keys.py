"""The API key file: owner-only, keys checked by their hash, revocations seen at once."""

from __future__ import annotations

import stat
from pathlib import Path

from shared.api_keys import KeyFile


def test_key_file_is_owner_only_and_checks_keys_by_hash(tmp_path: Path) -> None:
    keys = KeyFile(tmp_path / "keys.json")
    record, key = keys.create("laptop")
    assert stat.S_IMODE((tmp_path / "keys.json").stat().st_mode) == 0o600
    assert keys.check(key).record == record
    assert keys.check(key + "x").reason == "unknown API key"
    assert keys.check("not-a-key").reason == "unknown API key"
    keys.revoke(record.id)
    assert keys.check(key).reason == f"API key {record.id} was revoked"


def test_revocation_by_another_process_is_seen_without_restart(tmp_path: Path) -> None:
    gateway_view = KeyFile(tmp_path / "keys.json")
    record, key = KeyFile(tmp_path / "keys.json").create("ci")
    assert gateway_view.check(key).record is not None
    KeyFile(tmp_path / "keys.json").revoke(record.id)
    assert gateway_view.check(key).record is None
