"""``hindsight``: run the local stack, index folders, ask questions, provision models."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from cli.client import GatewayClient, GatewayError
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
console = Console()


def gateway() -> GatewayClient:
    return GatewayClient(get_settings().gateway_url)


@app.command()
def up(wait: Annotated[bool, typer.Option(help="Wait until every queue has a live worker.")] = True) -> None:
    """Start Redis (if none answers), one worker per queue and the gateway, as local processes."""
    stack = LocalStack(get_settings())
    started = stack.up()
    console.print(f"started: {', '.join(started) or 'nothing (all running)'}; logs in {stack.run_dir}")
    if wait:
        client = gateway()

        def healthy() -> bool:
            try:
                return client.health().get("status") == "ok"
            except Exception:
                return False

        wait_until(healthy, 120, "the local stack")
        console.print("[green]ready[/green]")


@app.command()
def down() -> None:
    """Stop exactly the processes that ``hindsight up`` started."""
    stopped = LocalStack(get_settings()).down()
    console.print(f"stopped: {', '.join(stopped) or 'nothing was running'}")


@app.command()
def status() -> None:
    """Show the local processes and which queues have live workers."""
    table = Table("process", "pid")
    for name, pid in LocalStack(get_settings()).running().items():
        table.add_row(name, str(pid))
    console.print(table)
    try:
        console.print(gateway().health())
    except Exception as exc:
        console.print(f"[red]gateway unreachable[/red]: {exc}")


@app.command()
def index(
    root: Annotated[Path, typer.Argument(exists=True, file_okay=False, resolve_path=True)],
) -> None:
    """Index (or re-sync) a folder and show its progress."""
    client = gateway()
    job_id = client.index(str(root))
    for event in client.index_events(job_id):
        render_event(event)
    report = client.index_report(job_id)
    if report:
        console.print(
            f"scanned {report.scanned}: {report.new} new, {report.changed} changed, "
            f"{report.unchanged} unchanged, {report.deleted} deleted, {report.failed} failed; "
            f"{report.chunks} chunks"
        )
        for failure in report.failures:
            console.print(f"[red]failed[/red] {failure.path}: {failure.reason}")


@app.command()
def ask(
    question: str,
    strategy: Annotated[
        Strategy | None, typer.Option(help="precise or exhaustive (default: the planner decides)")
    ] = None,
) -> None:
    """Ask a question; watch the stages live, then read the cited answer."""
    client = gateway()
    started = time.perf_counter()
    question_id = client.ask(question, QuestionOptions(strategy=strategy))
    for event in client.question_events(question_id):
        if event.stage == "answer":
            if event.status == "failed":
                console.print(f"[red]failed[/red]: {event.detail}")
                raise typer.Exit(1)
            render_answer(Answer.model_validate(event.data["answer"]))
        else:
            render_event(event)
    console.print(f"[dim]{(time.perf_counter() - started):.1f}s[/dim]")


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
    from services.reranker import provision
    from shared.model_prep import prepare_embedder

    settings = get_settings()
    figures = prepare_embedder(settings.embedder_dir, force=force)
    console.print(f"embedder ready at {settings.embedder_dir}: int8 vs fp32 cosine {figures}")
    if standin_reranker:
        result = provision.build_standin(settings.reranker_dir)
    else:
        result = provision.prepare(settings.reranker_dir)
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
    from services.reranker import provision

    settings = get_settings()
    try:
        console.print(provision.pull(settings.reranker_dir))
    except OSError as exc:
        console.print(f"[red]could not download {provision.HUB_REPO}[/red]: {exc}")
        raise typer.Exit(1) from exc


def main() -> None:
    try:
        app()
    except GatewayError as exc:
        console.print(f"[red]gateway refused[/red]: {exc}")
        raise SystemExit(1) from exc


if __name__ == "__main__":
    main()
