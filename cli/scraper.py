"""``hindsight scrape`` and ``hindsight import``: get Perplexity threads into the export folder.

``scrape_app`` drives the real site through Playwright (a visible window for the first login);
``import_app`` reads Perplexity's own export files and needs no browser at all.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from services.scraper.errors import ScraperError
from services.scraper.exporter import export_library
from services.scraper.imports import threads_from_data_export, threads_from_markdown_dir, write_threads
from services.scraper.models import Thread
from services.scraper.session import interactive_login
from shared.contracts import ExportReport
from shared.settings import Settings, get_settings

scrape_app = typer.Typer(help="Export your Perplexity library to Markdown with a browser.")
import_app = typer.Typer(help="Import Perplexity's own export files (no scraping).")
console = Console(soft_wrap=True)

ExportDir = Annotated[
    Path | None, typer.Option(help="Where the Markdown goes (default HINDSIGHT_EXPORT_DIR).")
]


def _settings(export_dir: Path | None) -> Settings:
    settings = get_settings()
    return settings.model_copy(update={"export_dir": export_dir}) if export_dir else settings


def _print_report(report: ExportReport) -> None:
    console.print(
        f"[bold]{report.discovered}[/] threads → {report.export_dir}: {report.new} new, "
        f"{report.changed} changed, {report.unchanged} unchanged, {report.gone} gone, {report.failed} failed"
    )
    for line in report.failures:
        console.print(f"  [yellow]![/] {line}")


def _fail(exc: ScraperError) -> typer.Exit:
    console.print(f"[red]{exc}[/]")
    return typer.Exit(1)


def _login(settings: Settings) -> None:
    def explain(_page: object) -> None:
        console.print(
            f"A browser window is open on {settings.perplexity_base_url}. Log in there (solve any "
            f"challenge); this continues by itself within {settings.scrape_login_timeout_s:.0f}s."
        )

    user = interactive_login(settings, explain)
    name = (user.get("user") or {}).get("email") or "your account"
    console.print(f"Logged in as {name}; saved to {settings.perplexity_state_path}")


@scrape_app.callback(invoke_without_command=True)
def scrape(
    login: Annotated[bool, typer.Option("--login", help="Log in again in a visible browser window.")] = False,
    refetch_all: Annotated[
        bool, typer.Option("--refetch-all", help="Fetch every thread, not only those whose listing moved.")
    ] = False,
    export_dir: ExportDir = None,
) -> None:
    """Export the library; only new or changed threads are written."""
    settings = _settings(export_dir)
    try:
        if login or not settings.perplexity_state_path.exists():
            _login(settings)
        report = export_library(settings, refetch_all=refetch_all)
    except ScraperError as exc:
        raise _fail(exc) from exc
    _print_report(report)
    if report.failed:
        raise typer.Exit(2)


def _import(load: Callable[[Settings], list[Thread]], export_dir: Path | None) -> None:
    settings = _settings(export_dir)
    try:
        threads = load(settings)
    except ScraperError as exc:
        raise _fail(exc) from exc
    _print_report(write_threads(threads, settings.export_root))


@import_app.command("perplexity-export")
def import_perplexity_export(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The data-request .json")],
    export_dir: ExportDir = None,
) -> None:
    """Import Perplexity's bulk data-request JSON."""
    _import(lambda settings: threads_from_data_export(file, settings.perplexity_base_url), export_dir)


@import_app.command("perplexity-markdown")
def import_perplexity_markdown(
    directory: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="Folder of .md exports")],
    export_dir: ExportDir = None,
) -> None:
    """Import per-thread Markdown downloaded from Perplexity (``Title.md``, ``Title(2).md``, ...)."""
    _import(lambda _settings: threads_from_markdown_dir(directory), export_dir)
