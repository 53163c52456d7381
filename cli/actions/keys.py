"""Create, list and revoke the API keys the gateway accepts, in the key file of the data folder."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.table import Table

from cli.console import console, shown
from cli.local_key import key_file
from shared.settings import Settings


def when(timestamp: float | None) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC") if timestamp else ""


def create_key(settings: Settings, name: str) -> None:
    """Create a key and print it once: only its hash is kept."""
    record, key = key_file(settings).create(name)
    console.print(f"created key [bold]{record.id}[/bold] ({shown(name)}); it is shown only now:")
    console.print(key, soft_wrap=True, highlight=False)
    console.print("send it as the X-API-Key header (or Authorization: Bearer), or set HINDSIGHT_API_KEY")


def list_keys(settings: Settings) -> None:
    """Every key's id, name, creation and revocation time (never the key)."""
    table = Table("id", "name", "created", "revoked")
    for record in key_file(settings).list():
        table.add_row(record.id, shown(record.name), when(record.created_at), when(record.revoked_at))
    console.print(table)


def revoke_key(settings: Settings, key_id: str) -> bool:
    """Revoke a key; the running gateway refuses it from its next request on. False if there is none."""
    try:
        record = key_file(settings).revoke(key_id)
    except KeyError as exc:
        console.print(f"[red]{shown(exc.args[0])}[/red]")
        return False
    console.print(f"revoked key {record.id} ({shown(record.name)})")
    return True
