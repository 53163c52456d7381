"""The local CLI's own API key: created by ``hindsight up``, kept in the data folder (mode 0600).

Keys are written straight to the key file in the data folder (hashed; see ``shared.api_keys``):
managing keys needs access to the machine's data, not to the gateway, so a lost key can always be
revoked even when no valid key is left.
"""

from __future__ import annotations

import os

from shared.api_keys import KeyFile
from shared.settings import Settings

LOCAL_KEY_NAME = "local-cli"


def key_file(settings: Settings) -> KeyFile:
    return KeyFile(settings.keys_file)


def stored_local_key(settings: Settings) -> str | None:
    try:
        return settings.cli_key_file.read_text().strip() or None
    except FileNotFoundError:
        return None


def client_key(settings: Settings) -> str | None:
    """The key the CLI sends: ``HINDSIGHT_API_KEY`` if set, else the local key ``hindsight up`` made."""
    return settings.gateway.api_key or stored_local_key(settings)


def ensure_local_key(settings: Settings) -> bool:
    """Give the local CLI a valid key of its own (mode 0600); True when a new one was created."""
    current = stored_local_key(settings)
    if current and key_file(settings).check(current).record is not None:
        return False
    _, key = key_file(settings).create(LOCAL_KEY_NAME)
    settings.cli_key_file.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(settings.cli_key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key + "\n")
    return True
