"""``hindsight keys create|list|revoke``, and the local CLI's own key.

Keys are written straight to the key file in the data folder (hashed; see
``shared.api_keys``): managing keys needs access to the machine's data, not to the gateway,
so a lost key can always be revoked even when no valid key is left.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from shared.api_keys import KeyFile
from shared.settings import Settings, get_settings

app = typer.Typer(help="Create, list and revoke the API keys the gateway accepts.", no_args_is_help=True)
console = Console()
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
    return settings.api_key or stored_local_key(settings)


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


def when(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else ""


@app.command("create")
def create(name: Annotated[str, typer.Option(help="Who or what the key is for.")] = "default") -> None:
    """Create a key and print it once: only its hash is kept."""
    record, key = key_file(get_settings()).create(name)
    console.print(f"created key [bold]{record.id}[/bold] ({name}); it is shown only now:")
    console.print(key, soft_wrap=True, highlight=False)
    console.print("send it as the X-API-Key header (or Authorization: Bearer), or set HINDSIGHT_API_KEY")


@app.command("list")
def list_keys() -> None:
    """Show every key's id, name, creation and revocation time (never the key)."""
    table = Table("id", "name", "created", "revoked")
    for record in key_file(get_settings()).list():
        table.add_row(record.id, record.name, when(record.created_at), when(record.revoked_at))
    console.print(table)


@app.command("revoke")
def revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id, as `hindsight keys list` shows.")],
) -> None:
    """Revoke a key; the running gateway refuses it from its next request on."""
    try:
        record = key_file(get_settings()).revoke(key_id)
    except KeyError as exc:
        console.print(f"[red]{exc.args[0]}[/red]")
        raise typer.Exit(1) from exc
    console.print(f"revoked key {record.id} ({record.name})")


if __name__ == "__main__":
    app()
