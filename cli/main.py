"""``hindsight``: run the local stack, index folders, ask questions, manage keys and models.

Each command is a thin shell over a plain function (``start_stack``, ``indexer.run_index``,
``ask_question``, ...) that the REPL calls too. Sub-apps are one ``app.add_typer`` line each.
"""

from __future__ import annotations

import shutil
import time
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from cli import indexer, keys, search
from cli.client import GatewayClient, GatewayError, default_client
from cli.local_stack import LocalStack, wait_until
from cli.scraper import import_app, scrape_app
from shared.contracts import Answer, Event, QuestionOptions, Strategy
from shared.settings import get_settings

app = typer.Typer(
    help="Hindsight: answers from your own research history, with exact citations.", no_args_is_help=True
)
models_app = typer.Typer(help="Provision the ONNX models (build steps, run once).", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(scrape_app, name="scrape")
app.add_typer(import_app, name="import")
app.add_typer(keys.app, name="keys")
app.command("index")(indexer.index)
app.command("search")(search.search)
console = Console()


def gateway() -> GatewayClient:
    return default_client()


def start_stack(wait: bool = True) -> None:
    """Start the local processes; with ``wait``, until every queue has a live worker."""
    settings = get_settings()
    if settings.gateway_auth == "keys" and keys.ensure_local_key(settings):
        console.print(f"created an API key for this CLI in {settings.cli_key_file} (mode 0600)")
    stack = LocalStack(settings)
    with console.status("starting redis, workers and the gateway…"):
        started = stack.up()
    console.print(f"started: {', '.join(started) or 'nothing (all running)'}; logs in {stack.run_dir}")
    if wait:
        client = gateway()

        def healthy() -> bool:
            try:
                return client.health().get("status") == "ok"
            except Exception:
                return False

        with console.status("waiting for a live worker on every queue…"):
            wait_until(healthy, 120, "the local stack")
        console.print("[green]ready[/green]")
    describe_access()


def describe_access() -> None:
    """Say plainly how the gateway is protected and how to reach the web page."""
    settings = get_settings()
    url = settings.gateway_url.rstrip("/")
    if settings.gateway_auth == "open":
        console.print(f"[yellow]gateway is OPEN (no API key) on {settings.gateway_host}[/yellow]: {url}/")
        return
    key = keys.client_key(settings)
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
        console.print(gateway().health())
    except Exception as exc:
        console.print(f"[red]gateway unreachable[/red]: {exc}")


def ask_question(question: str, strategy: Strategy | None = None) -> Answer | None:
    """Ask; show each stage as it finishes under a spinner, then the cited answer."""
    client = gateway()
    started = time.perf_counter()
    question_id = client.ask(question, QuestionOptions(strategy=strategy))
    answer = None
    with console.status("planning…") as spinner:
        for event in client.question_events(question_id):
            if event.stage == "answer" and event.status == "failed":
                console.print(f"[red]failed[/red]: {event.detail}")
                return None
            if event.stage == "answer":
                answer = Answer.model_validate(event.data["answer"])
            else:
                render_event(event)
                spinner.update(f"{event.stage} {event.status}…")
    if answer:
        render_answer(answer)
    console.print(f"[dim]{(time.perf_counter() - started):.1f}s[/dim]")
    return answer


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


@app.command()
def up(wait: Annotated[bool, typer.Option(help="Wait until every queue has a live worker.")] = True) -> None:
    """Start Redis (if none answers), one worker per queue and the gateway, as local processes."""
    start_stack(wait)


@app.command()
def down() -> None:
    """Stop exactly the processes that ``hindsight up`` started."""
    stop_stack()


@app.command()
def status() -> None:
    """Show the local processes and which queues have live workers."""
    show_status()


@app.command()
def ask(
    question: str,
    strategy: Annotated[
        Strategy | None, typer.Option(help="precise or exhaustive (default: the planner decides)")
    ] = None,
) -> None:
    """Ask a question; watch the stages live, then read the cited answer."""
    if ask_question(question, strategy) is None:
        raise typer.Exit(1)


@app.command()
def reset(yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False) -> None:
    """Delete the index so the next ``hindsight index`` rebuilds it from scratch."""
    if yes or typer.confirm(f"delete the index in {get_settings().store_dir}?", default=False):
        reset_index()
    else:
        console.print("nothing deleted")


@app.command()
def repl() -> None:
    """An interactive menu: ask and search, build the index, scrape, reset, status."""
    from cli.repl import Repl

    Repl(app, console).run()


def render_event(event: Event) -> None:
    colour = {"failed": "red", "done": "green", "skipped": "yellow"}.get(event.status, "cyan")
    elapsed = f" ({event.elapsed_ms:.0f} ms)" if event.elapsed_ms else ""
    console.print(f"[{colour}]{event.stage:>8} {event.status:<8}[/{colour}] {event.detail}{elapsed}")


def render_answer(answer: Answer) -> None:
    console.rule("answer")
    console.print(Markdown(answer.markdown))
    if answer.citations:
        console.rule("citations")
    for c in answer.citations:
        where = f"p. {c.page}, " if c.page else ""
        mark = "verified" if c.verified else "[red]unverified[/red]"
        console.print(
            f"[{c.number}] {c.title} — {c.source_uri} ({where}chars {c.char_start}-{c.char_end}, {mark})"
        )


@models_app.command("prepare")
def models_prepare(
    standin_reranker: Annotated[
        bool, typer.Option(help="Build a stand-in cross-encoder from packaged MiniLM weights (offline).")
    ] = False,
    force: Annotated[bool, typer.Option(help="Rebuild even if the files exist.")] = False,
) -> None:
    """Export and quantise the embedder; quantise (or build a stand-in) cross-encoder."""
    from provisioning import reranker, standin
    from provisioning.embedder import prepare_embedder

    settings = get_settings()
    figures = prepare_embedder(settings.embedder_dir, force=force)
    console.print(f"embedder ready at {settings.embedder_dir}: int8 vs fp32 cosine {figures}")
    if standin_reranker:
        result = standin.build_standin(settings.reranker_dir)
    else:
        result = reranker.prepare(settings.reranker_dir)
    if result is None:
        console.print(
            f"no cross-encoder at {settings.reranker_dir}: run `hindsight models pull` "
            "(reranking passes the fused order through until then)"
        )
    else:
        console.print(f"cross-encoder ready at {settings.reranker_dir}: {result}")


@models_app.command("pull")
def models_pull() -> None:
    """Download the trained cross-encoder (needs a network) and quantise it."""
    from provisioning import reranker

    settings = get_settings()
    try:
        console.print(reranker.pull(settings.reranker_dir))
    except OSError as exc:
        console.print(f"[red]could not download {reranker.HUB_REPO}[/red]: {exc}")
        raise typer.Exit(1) from exc


def main() -> None:
    try:
        app()
    except GatewayError as exc:
        console.print(f"[red]gateway refused[/red]: {exc}")
        raise SystemExit(1) from exc


if __name__ == "__main__":
    main()
