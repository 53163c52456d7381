"""`hindsight`: the command line's wiring. Each command parses its arguments and calls one plain
action of `cli/actions/` (which the REPL calls too); exit codes are decided here.

The CLI is a client: it talks to the gateway (`cli.client`), runs the local processes
(`cli.local_stack`), and calls public functions only (the scraper's public surface, `provisioning`).
The scraper and the model builders are imported by their commands alone, so the gateway's image, which
ships neither, still runs `hindsight keys`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Annotated

import httpx
import typer
from pydantic import ValidationError

from cli.actions import keys, models, search, stack
from cli.actions.ask import ask_question, latest_conversation, save_answer
from cli.actions.index import INTERRUPTED, index_and_watch, index_when_running, run_index
from cli.client import GatewayError, default_client, transport_failure
from cli.console import console, error_console, shown
from cli.listeners import UntrustedListenerError
from cli.local_stack import StackError
from shared.contracts import SearchFilters, SearchMode, SearchRequest, SourceKind, Strategy
from shared.refusals import NOTHING_TO_ASK, NOTHING_TO_SEARCH
from shared.settings import get_settings

app = typer.Typer(
    help="Hindsight: answers from your own research history, with exact citations.", no_args_is_help=True
)
models_app = typer.Typer(help="Provision the ONNX models (build steps, run once).", no_args_is_help=True)
keys_app = typer.Typer(help="Create, list and revoke the API keys the gateway accepts.", no_args_is_help=True)
scrape_app = typer.Typer(help="Export your Perplexity library to Markdown with a browser, then index it.")
import_app = typer.Typer(help="Import Perplexity's own export files (no scraping).")
app.add_typer(models_app, name="models")
app.add_typer(keys_app, name="keys")
app.add_typer(scrape_app, name="scrape")
app.add_typer(import_app, name="import")
library_app = typer.Typer(
    help="Check the Perplexity library: whole, and found by search.", no_args_is_help=True
)
app.add_typer(library_app, name="library")

ExportDir = Annotated[
    Path | None, typer.Option(help="Where the Markdown goes (default HINDSIGHT_EXPORT_DIR).")
]


@app.command()
def up(wait: Annotated[bool, typer.Option(help="Wait until every queue has a live worker.")] = True) -> None:
    """Start Redis (if none answers), one worker per queue and the gateway, as local processes."""
    stack.start_stack(wait)


@app.command()
def down() -> None:
    """Stop exactly the processes that `hindsight up` started."""
    stack.stop_stack()


@app.command()
def status() -> None:
    """Show the web address, the processes, live workers, the answer and reranker modes, watched folders."""
    stack.show_status()


AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON (for scripts), nothing else.")]


@app.command("open")
def open_page() -> None:
    """Open the web page in your browser, signed in with this CLI's key."""
    stack.open_page()


@app.command()
def ask(
    question: str,
    strategy: Annotated[
        Strategy | None, typer.Option(help="precise or exhaustive (default: the planner decides)")
    ] = None,
    as_json: AsJson = False,
    stages: Annotated[
        bool, typer.Option("--stages", help="Print each stage's details as it finishes.")
    ] = False,
    continue_latest: Annotated[
        bool, typer.Option("--continue", help="A follow-up of your latest question's conversation.")
    ] = False,
    conversation: Annotated[
        str | None, typer.Option("-c", "--conversation", help="A follow-up of this conversation (its id).")
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(
            help="Save the answer as a Markdown note in this folder (then index it).", metavar="FOLDER"
        ),
    ] = None,
) -> None:
    """Ask a question and read the cited answer (Ctrl-C cancels it); a follow-up with --continue."""
    if not question.strip():
        error_console.print(f"[red]{shown(NOTHING_TO_ASK)}[/red]", soft_wrap=True)
        raise typer.Exit(2)
    if continue_latest and conversation is None:
        conversation = latest_conversation()
    asked = ask_question(question, strategy, as_json, stages, conversation)
    if asked is None:
        raise typer.Exit(1)
    if not as_json:
        console.print(f"[dim]conversation {asked.conversation_id} (follow up: --continue)[/dim]")
    if save is not None:
        save_answer(save, asked, question)


@app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[SearchMode, typer.Option(help="auto, semantic, exact or hybrid.")] = SearchMode.AUTO,
    limit: Annotated[int, typer.Option(min=1, max=100, help="How many passages.")] = 10,
    kind: Annotated[list[SourceKind] | None, typer.Option(help="Only these source kinds.")] = None,
    space: Annotated[list[str] | None, typer.Option(help="Only these spaces/collections.")] = None,
    path_prefix: Annotated[str | None, typer.Option(help="Only files under this path.")] = None,
    date_from: Annotated[datetime | None, typer.Option(help="Only documents dated from.")] = None,
    date_to: Annotated[datetime | None, typer.Option(help="Only documents dated until.")] = None,
    k_adjacent: Annotated[int, typer.Option(min=0, max=3, help="Neighbour chunks to stitch on.")] = 0,
    as_json: AsJson = False,
) -> None:
    """Search without synthesis and print the ranked passages with how each was found."""
    if not query.strip():
        error_console.print(f"[red]{shown(NOTHING_TO_SEARCH)}[/red]", soft_wrap=True)
        raise typer.Exit(2)
    filters = SearchFilters(
        kinds=kind or None,
        spaces=space or None,
        path_prefix=path_prefix,
        date_from=date_from,
        date_to=date_to,
    )
    request = SearchRequest(query=query, mode=mode, limit=limit, k_adjacent=k_adjacent, filters=filters)
    if search.search_passages(request, as_json) is None:
        raise typer.Exit(1)


@app.command()
def index(
    root: Annotated[Path, typer.Argument(exists=True, file_okay=False)],
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep watching and re-sync after every change (Ctrl-C stops).")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Allow deleting more than half of the folder's documents.")
    ] = False,
    re_register: Annotated[
        bool,
        typer.Option("--re-register", help="Register the folder again after you moved or replaced it."),
    ] = False,
) -> None:
    """Index (or re-sync) a folder and show its progress; with --watch, keep it in sync.

    The folder becomes one of the roots Hindsight may read (``roots.txt`` in the data folder), pinned
    to the folder it is now: replaced later (by a link, or another folder), it is refused. Exits 1 when
    nothing could be indexed: the folder was refused, the scan failed, or every new or changed file
    failed (a scan with some files indexed and some failed exits 0 and lists the failures). Ctrl-C
    cancels the job (files already indexed stay indexed) and exits 130."""
    root = root.absolute()  # not resolved: a registered folder replaced by a link must be seen as such
    try:
        if watch:
            index_and_watch(default_client(), root, get_settings().indexing.watch_debounce_ms, re_register)
            return
        report = run_index(default_client(), root, force, re_register)
    except KeyboardInterrupt:
        raise typer.Exit(INTERRUPTED) from None
    if report is None or report.nothing_indexed:
        raise typer.Exit(1)


@app.command()
def reset(yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False) -> None:
    """Delete the index so the next `hindsight index` rebuilds it from scratch."""
    if yes or typer.confirm(f"delete the index in {get_settings().store_dir}?", default=False):
        stack.reset_index()
    else:
        console.print("nothing deleted")


@app.command("mcp")
def mcp_server() -> None:
    """Serve Hindsight's tools (search, ask, get_passage, list_sources) to an assistant over MCP stdio."""
    from cli.actions.mcp_stdio import serve_stdio  # the MCP SDK loads only for this command

    serve_stdio()


@app.command()
def repl() -> None:
    """An interactive menu: ask and search, build the index, scrape, reset, status."""
    from cli.repl import Repl

    Repl().run()


@models_app.command("prepare")
def models_prepare(
    standin_reranker: Annotated[
        bool, typer.Option(help="Build a stand-in cross-encoder from packaged MiniLM weights (offline).")
    ] = False,
    force: Annotated[bool, typer.Option(help="Rebuild even if the files exist.")] = False,
) -> None:
    """Export and quantise the embedder; quantise (or build a stand-in) cross-encoder."""
    models.prepare_models(standin_reranker, force)


@models_app.command("pull")
def models_pull() -> None:
    """Download the trained cross-encoder (needs a network) and quantise it."""
    if not models.pull_reranker():
        raise typer.Exit(1)


@keys_app.command("create")
def keys_create(name: Annotated[str, typer.Option(help="Who or what the key is for.")] = "default") -> None:
    """Create a key and print it once: only its hash is kept."""
    keys.create_key(get_settings(), name)


@keys_app.command("list")
def keys_list() -> None:
    """Show every key's id, name, creation and revocation time (never the key)."""
    keys.list_keys(get_settings())


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id, as `hindsight keys list` shows.")],
) -> None:
    """Revoke a key; the running gateway refuses it from its next request on."""
    if not keys.revoke_key(get_settings(), key_id):
        raise typer.Exit(1)


@scrape_app.callback(invoke_without_command=True)
def scrape_library(
    login: Annotated[bool, typer.Option("--login", help="Log in again in a visible browser window.")] = False,
    refetch_all: Annotated[
        bool, typer.Option("--refetch-all", help="Fetch every thread, not only those whose listing moved.")
    ] = False,
    no_index: Annotated[
        bool, typer.Option("--no-index", help="Do not wait for the indexing (it goes on in Hindsight).")
    ] = False,
    headless: Annotated[
        bool, typer.Option("--headless", help="Refused: set the worker's HINDSIGHT_SCRAPE_HEADLESS.")
    ] = False,
    export_dir: Annotated[
        Path | None, typer.Option("--export-dir", help="Refused: set the worker's HINDSIGHT_EXPORT_DIR.")
    ] = None,
) -> None:
    """Export the library through Hindsight's scrape worker (only new or changed threads are written),
    then index what changed; logs in here first when asked or never done."""
    from cli.actions import scrape

    worker_setting = "HINDSIGHT_SCRAPE_HEADLESS=true" if headless else "HINDSIGHT_EXPORT_DIR"
    if headless or export_dir:
        console.print(
            f"[red]the scrape worker exports with its own settings: set {worker_setting} and restart "
            "Hindsight (`hindsight down`, then `hindsight up`)[/]",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    with scraper_errors():
        report = scrape.scrape(get_settings(), login, refetch_all, index=not no_index)
    if report.failed:
        raise typer.Exit(2)


@import_app.command("perplexity-export")
def import_perplexity_export(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The data-request .json")],
    export_dir: ExportDir = None,
) -> None:
    """Import Perplexity's bulk data-request JSON."""
    from cli.actions import scrape

    settings = scrape.settings_for(export_dir)
    with scraper_errors():
        report = scrape.import_data_export(settings, file)
    index_imported(settings.export_root)
    if report.failed:
        raise typer.Exit(2)


@import_app.command("perplexity-markdown")
def import_perplexity_markdown(
    directory: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="Folder of .md exports")],
    export_dir: ExportDir = None,
) -> None:
    """Import per-thread Markdown downloaded from Perplexity (`Title.md`, `Title(2).md`, ...)."""
    from cli.actions import scrape

    settings = scrape.settings_for(export_dir)
    with scraper_errors():
        report = scrape.import_markdown_dir(settings, directory)
    index_imported(settings.export_root)
    if report.failed:
        raise typer.Exit(2)


@library_app.command("check")
def library_check(
    export_dir: ExportDir = None,
    no_search: Annotated[
        bool,
        typer.Option("--no-search", help="Check the files only; do not ask each thread's first question."),
    ] = False,
) -> None:
    """Threads by origin (scraped, imported, both), turns against what the site reported, files that do
    not read as a thread; then each thread's first question searched: Recall@5, MRR, worst threads."""
    from cli.actions import library, scrape

    settings = scrape.settings_for(export_dir)
    search = None if no_search else library.gateway_search(settings.export_root)
    check, _ = library.library_check(settings, search)
    if check.unreadable:
        raise typer.Exit(2)


def index_imported(export_root: Path) -> None:
    """Index the imported threads now, or say exactly what to run when Hindsight is not running."""
    with suppress(httpx.TransportError):
        index_when_running(
            export_root,
            f"[yellow]not indexed yet[/yellow]: start Hindsight with `hindsight up`, then run "
            f"`hindsight index {export_root}`",
        )


@contextmanager
def scraper_errors() -> Iterator[None]:
    """A :class:`ScraperError` is printed in red and the command exits with status 1."""
    from services.scraper import ScraperError

    try:
        yield
    except ScraperError as exc:
        console.print(f"[red]{shown(exc)}[/]", soft_wrap=True)
        raise typer.Exit(1) from exc


def main() -> None:
    """Run a command; a refusal, an unreachable gateway or bad input is one sentence on stderr, never a
    traceback."""
    try:
        app()
    except GatewayError as exc:
        error_console.print(f"[red]{shown(exc)}[/red]", soft_wrap=True)
        raise SystemExit(1) from exc
    except httpx.TransportError as exc:
        error_console.print(unreachable(exc), soft_wrap=True)
        raise SystemExit(1) from exc
    except ValidationError as exc:
        error_console.print(f"[red]{shown(invalid_input(exc))}[/red]", soft_wrap=True)
        raise SystemExit(2) from exc
    except (StackError, UntrustedListenerError, TimeoutError) as exc:
        error_console.print(f"[red]{shown(exc)}[/red]", soft_wrap=True)
        raise SystemExit(1) from exc


def unreachable(exc: httpx.TransportError) -> str:
    """What to say when the gateway does not answer."""
    return f"[red]{transport_failure(exc)}[/red] (gateway: {get_settings().gateway.gateway_url})"


def invalid_input(exc: ValidationError) -> str:
    """A validation error as `field: message` parts in one line."""
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()]
    return "invalid input: " + "; ".join(parts)


if __name__ == "__main__":
    main()
