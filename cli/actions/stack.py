"""Start, stop and inspect the local stack, and delete the index."""

from __future__ import annotations

import html
import os
import webbrowser
from pathlib import Path
from typing import Any

import httpx
from rich.table import Table

from cli.client import GatewayError, default_client, refuse_foreign_gateway, transport_failure
from cli.console import console, counted, shown
from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, StackError, wait_until
from shared.backends import clear_store
from shared.contracts import RerankerStatus, ScanReport
from shared.interfaces import VectorStoreError
from shared.model_files import MODEL_FILE, TOKENIZER_FILE
from shared.safe_files import write_private
from shared.settings import Settings, get_settings
from shared.topology import REQUIRED_QUEUES

READY_TIMEOUT_S = 120


def missing_embedder(settings: Settings) -> str | None:
    """Why the workers could not embed, or None: the ONNX embedder's model (or, for Ollama, the
    tokenizer that sizes chunks) must be provisioned in the models folder this data folder uses."""
    needed = settings.embedder_dir / (MODEL_FILE if settings.embedding.embedder == "onnx" else TOKENIZER_FILE)
    if needed.exists():
        return None
    return (
        f"no embedder at {settings.embedder_dir} ({needed.name} is missing): run `hindsight models prepare` "
        "with the same HINDSIGHT_DATA_DIR, or set HINDSIGHT_MODELS_DIR to a models folder that has it"
    )


def start_stack(wait: bool = True) -> None:
    """Start the local processes; with ``wait``, until every queue has a live worker. Refused, before
    anything starts, when the embedder is not provisioned (indexing and search would fail)."""
    settings = get_settings()
    missing = missing_embedder(settings)
    if missing:
        raise StackError(missing)
    warn_if_root()
    # Refuses a data folder that is a link or another user's, before a key is written into it.
    stack = LocalStack(settings)
    created = settings.gateway.gateway_auth == "keys" and ensure_local_key(settings)
    if created:
        console.print(f"created an API key for this CLI in {settings.cli_key_file} (mode 0600)")
    with console.status("starting redis, workers and the gateway…"):
        started = stack.up()
    console.print(f"started: {', '.join(started) or 'nothing (all running)'}; logs in {stack.run_dir}")
    with console.status("waiting for the gateway to listen…"):
        wait_until(stack.gateway_listening, READY_TIMEOUT_S, "the gateway")
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
    describe_access(created)


def warn_if_root() -> None:
    """Say so when the stack is about to run as root: nothing in it needs the privilege."""
    if os.geteuid() == 0:
        console.print(
            "[yellow]running as root[/yellow]: every service runs as root too; a user account of its own "
            "is safer (the stack needs no privilege)"
        )


def describe_access(new_key: bool) -> None:
    """Say plainly how the gateway is protected and how to reach the web page; the page's address
    with the key only when the key is ``new_key`` (created now): never again on later starts, where
    terminal logs and screen shares would collect it."""
    settings = get_settings()
    url = settings.gateway.gateway_url.rstrip("/")
    if settings.gateway.gateway_auth == "open":
        console.print(
            f"[yellow]gateway is OPEN (no API key) on {settings.gateway.gateway_host}[/yellow]: {url}/"
        )
        return
    key = client_key(settings)
    console.print(f"gateway at {url} requires an API key; this CLI uses its own key")
    if key and new_key:
        console.print(
            f"web page (shown once; the key travels in the #fragment, never to a server): {url}/#key={key}",
            soft_wrap=True,
        )
    else:
        console.print(f"web page: {url}/ (`hindsight open` opens it signed in with this CLI's key)")


def page_url() -> str:
    """The web page's address, with this CLI's key in the #fragment (which never reaches a server)."""
    settings = get_settings()
    url = settings.gateway.gateway_url.rstrip("/") + "/"
    key = client_key(settings) if settings.gateway.gateway_auth == "keys" else None
    return f"{url}#key={key}" if key else url


def open_page() -> None:
    """Open the web page signed in, without the key on any command line (every user sees those in
    ``ps``): the browser is given a private file that forwards to the page with the key in its
    #fragment (mode 0600 in the run folder, as Jupyter does)."""
    settings = get_settings()
    refuse_foreign_gateway(settings.gateway.gateway_url)
    url = page_url()
    target = forwarding_page(settings.run_dir, url).as_uri() if "#key=" in url else url
    if not webbrowser.open(target):
        console.print(f"no browser found; open {target} (it signs the page in)", soft_wrap=True)


def forwarding_page(run_dir: Path, url: str) -> Path:
    """A private HTML file that sends the browser on to ``url`` at once."""
    quoted = html.escape(url, quote=True)
    page = run_dir / "open.html"
    write_private(
        page,
        f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={quoted}">'
        f'<title>Hindsight</title><a href="{quoted}">Open Hindsight</a>\n',
    )
    return page


def stop_stack() -> None:
    stopped = LocalStack(get_settings()).down()
    console.print(f"stopped: {', '.join(stopped) or 'nothing was running'}")


def show_status() -> None:
    """One table: the web address, the local processes, the gateway, the workers, how answers are
    written and ranked (with a warning when the reranker passes the fused order through), and the
    watched folders."""
    settings = get_settings()
    table = Table(show_header=False, title="Hindsight", title_justify="left")
    table.add_row(
        "web page", f"{settings.gateway.gateway_url.rstrip('/')}/  (`hindsight open` opens it with the key)"
    )
    processes = LocalStack(settings).running()
    table.add_row("local processes", ", ".join(f"{n} ({p})" for n, p in processes.items()) or "none")
    table.add_row("answers", llm_mode(settings.generation.llm))
    missing = missing_embedder(settings)
    table.add_row("embedder", f"[red]{shown(missing)}[/red]" if missing else str(settings.embedder_dir))
    client = default_client()
    try:
        health = client.health()
    except httpx.TransportError as exc:
        table.add_row("gateway", f"[red]{transport_failure(exc)}[/red]")
        console.print(table)
        return
    table.add_row("gateway", gateway_line(health))
    table.add_row("reranker", reranker_line(health.get("rerankers")))
    try:
        folders = client.library()
    except GatewayError as exc:
        table.add_row("folders", f"[red]{shown(exc)}[/red]")
    else:
        table.add_row("documents", str(sum(int(f["documents"]) for f in folders)))
        table.add_row(
            "folders", "\n".join(folder_line(f) for f in folders) or "none yet (`hindsight index FOLDER`)"
        )
    console.print(table)


def folder_line(folder: dict[str, Any]) -> str:
    """``/notes — 12 documents, 1 failed, watched``."""
    count = int(folder["documents"])
    facts = [counted(count, "document")]
    report = ScanReport.model_validate(folder["last_report"]) if folder.get("last_report") else None
    if report and report.failed:
        facts.append(f"[red]{report.failed} failed[/red]")
    if folder.get("running"):
        facts.append("syncing now")
    facts.append("watched" if folder.get("watched") else "not watched")
    return f"{shown(folder['root'])} — {', '.join(facts)}"


def llm_mode(llm: str) -> str:
    if llm == "none":
        return (
            "extractive: quotes the best passages (no chat model; set HINDSIGHT_LLM=ollama for "
            "written answers, see the README)"
        )
    return f"written by a chat model ({llm})"


def gateway_line(health: dict[str, object]) -> str:
    queues = health.get("queues")
    counts = queues if isinstance(queues, dict) else {}
    workers = ", ".join(f"{queue} {count}" for queue, count in counts.items())
    missing = [queue for queue in REQUIRED_QUEUES if not counts.get(queue)]
    if health.get("status") == "ok":
        return f"[green]ok[/green] — live workers per queue: {workers}"
    if not health.get("redis"):
        return "[red]degraded[/red] — Redis does not answer"
    return (
        f"[red]degraded[/red] — no live worker on {', '.join(missing)} (`hindsight up` starts them); "
        f"live workers per queue: {workers}"
    )


def reranker_line(statuses: object) -> str:
    """Scoring with a model, or a warning that the fused order passes through unranked."""
    reported = [RerankerStatus.model_validate(s) for s in statuses] if isinstance(statuses, list) else []
    if not reported:
        return "[yellow]no reranker worker has reported yet[/yellow]"
    if all(s.mode == "scoring" for s in reported):
        return f"[green]scoring[/green] with {reported[0].model}"
    return (
        "[yellow]pass-through: no cross-encoder model, so passages keep the search's order; "
        "`hindsight models pull` installs it[/yellow]"
    )


def reset_index() -> None:
    """Delete the index (vector store and manifest); stop the stack first and start it again after."""
    settings = get_settings()
    stack = LocalStack(settings)
    was_running = bool(stack.running())
    if was_running:
        stop_stack()
    where = settings.storage.weaviate_url if settings.storage.store == "weaviate" else settings.store_dir
    with console.status(f"deleting the index at {where}…"):
        try:
            clear_store(settings)
        except VectorStoreError as exc:
            raise StackError(f"the index at {where} could not be emptied: {exc}") from exc
    console.print(f"deleted the index at {where}; your files and exports are untouched")
    if was_running:
        start_stack()
