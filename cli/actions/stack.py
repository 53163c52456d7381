"""Start, stop and inspect the local stack, and delete the index."""

from __future__ import annotations

import shutil

from rich.table import Table

from cli.client import default_client
from cli.console import console
from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, wait_until
from shared.settings import get_settings

READY_TIMEOUT_S = 120


def start_stack(wait: bool = True) -> None:
    """Start the local processes; with ``wait``, until every queue has a live worker."""
    settings = get_settings()
    if settings.gateway_auth == "keys" and ensure_local_key(settings):
        console.print(f"created an API key for this CLI in {settings.cli_key_file} (mode 0600)")
    stack = LocalStack(settings)
    with console.status("starting redis, workers and the gateway…"):
        started = stack.up()
    console.print(f"started: {', '.join(started) or 'nothing (all running)'}; logs in {stack.run_dir}")
    if wait:
        client = default_client()

        def healthy() -> bool:
            try:
                return client.health().get("status") == "ok"
            except Exception:
                return False

        with console.status("waiting for a live worker on every queue…"):
            wait_until(healthy, READY_TIMEOUT_S, "the local stack")
        console.print("[green]ready[/green]")
    describe_access()


def describe_access() -> None:
    """Say plainly how the gateway is protected and how to reach the web page."""
    settings = get_settings()
    url = settings.gateway_url.rstrip("/")
    if settings.gateway_auth == "open":
        console.print(f"[yellow]gateway is OPEN (no API key) on {settings.gateway_host}[/yellow]: {url}/")
        return
    key = client_key(settings)
    console.print(f"gateway at {url} requires an API key; this CLI uses its own key")
    if key:
        console.print(
            f"web page (the key travels in the #fragment, never to a server): {url}/#key={key}",
            soft_wrap=True,
        )


def stop_stack() -> None:
    stopped = LocalStack(get_settings()).down()
    console.print(f"stopped: {', '.join(stopped) or 'nothing was running'}")


def show_status() -> None:
    table = Table("process", "pid")
    for name, pid in LocalStack(get_settings()).running().items():
        table.add_row(name, str(pid))
    console.print(table)
    try:
        console.print(default_client().health())
    except Exception as exc:
        console.print(f"[red]gateway unreachable[/red]: {exc}")


def reset_index() -> None:
    """Delete the index (vector store and manifest); stop the stack first and start it again after."""
    settings = get_settings()
    stack = LocalStack(settings)
    was_running = bool(stack.running())
    if was_running:
        stop_stack()
    with console.status(f"deleting {settings.store_dir}…"):
        shutil.rmtree(settings.store_dir, ignore_errors=True)
    console.print(f"deleted the index at {settings.store_dir}; your files and exports are untouched")
    if was_running:
        start_stack()
