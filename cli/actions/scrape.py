"""Get Perplexity threads into the export folder: scrape the site with a browser, or import
Perplexity's own export files (no browser at all); then index the folder through the gateway.

Each action prints what it did and returns the export's counts; a :class:`ScraperError` carries the
message the user needs (what to install, how to log in). Scraping runs here, in the user's own
browser session (headful unless ``--headless``); the indexing is the gateway's index job, shown with
the same progress bar as ``hindsight index``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.actions.index import index_when_running
from cli.console import console, shown
from services.scraper import (
    DATA_EXPORT_MAX_BYTES,
    Imported,
    export_library,
    interactive_login,
    threads_from_data_export,
    threads_from_markdown_dir,
    write_threads,
)
from shared.contracts import ExportReport
from shared.settings import Settings, get_settings


def settings_for(export_dir: Path | None) -> Settings:
    """The settings, with the export folder the command line named."""
    settings = get_settings()
    return settings.model_copy(update={"export_dir": export_dir}) if export_dir else settings


def print_report(report: ExportReport) -> None:
    console.print(
        f"[bold]{report.discovered}[/] threads → {report.export_dir}: {report.new} new, "
        f"{report.changed} changed, {report.unchanged} unchanged, {report.gone} gone, {report.failed} failed",
        soft_wrap=True,
    )
    for line in report.kept_once:
        console.print(f"  = {shown(line)} (the same thread: kept once)", soft_wrap=True)
    for line in report.failures:
        console.print(f"  [yellow]![/] {shown(line)}", soft_wrap=True)


def log_in(settings: Settings) -> None:
    """Open a visible browser window on Perplexity and wait for the user to log in there."""

    def explain(_page: object) -> None:
        console.print(
            f"A browser window is open on {settings.perplexity_base_url}. Log in there (solve any "
            f"challenge); this continues by itself within {settings.scrape_login_timeout_s:.0f}s.",
            soft_wrap=True,
        )

    user = interactive_login(settings, explain)
    name = (user.get("user") or {}).get("email") or "your account"
    console.print(f"Logged in as {name}; saved to {settings.perplexity_state_path}", soft_wrap=True)


def private_export_folder(settings: Settings) -> Path:
    """The export folder, created readable by this user alone (0700) when it does not exist yet:
    exported threads are private research, wherever ``--export-dir`` puts them (a folder that exists
    is left as its owner made it)."""
    folder = settings.export_root
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    return folder


def index_export(export_dir: Path) -> None:
    """Index the export folder, or say it was exported but not indexed and what to run."""
    index_when_running(
        export_dir,
        f"[yellow]exported but not indexed[/]: indexing needs the stack (`hindsight up`), "
        f"then `hindsight index {export_dir}`",
    )


def scrape(
    settings: Settings,
    login: bool = False,
    refetch_all: bool = False,
    *,
    index: bool = True,
    headless: bool | None = None,
) -> ExportReport:
    """Export the library (logging in first when asked or never done), then index the export folder
    unless ``index`` is false; only new or changed threads are written."""
    if headless is not None:
        settings = settings.model_copy(update={"scrape_headless": headless})
    private_export_folder(settings)
    if login or not settings.perplexity_state_path.exists():
        log_in(settings)
    with console.status("exporting the Perplexity library") as status:

        def show(detail: str, _data: dict[str, Any]) -> None:
            status.update(f"exporting the Perplexity library: {detail}")

        report = export_library(settings, refetch_all=refetch_all, progress=show)
    print_report(report)
    if index:
        index_export(Path(report.export_dir))
    return report


def import_threads(settings: Settings, load: Callable[[Settings], Imported]) -> ExportReport:
    report = write_threads(load(settings), private_export_folder(settings))
    print_report(report)
    return report


def import_data_export(settings: Settings, file: Path) -> ExportReport:
    """Perplexity's bulk data-request JSON."""
    return import_threads(
        settings,
        lambda s: threads_from_data_export(
            file, s.perplexity_base_url, max(s.max_file_bytes, DATA_EXPORT_MAX_BYTES)
        ),
    )


def import_markdown_dir(settings: Settings, directory: Path) -> ExportReport:
    """Per-thread Markdown downloaded from Perplexity (``Title.md``, ``Title(2).md``, ...)."""
    return import_threads(settings, lambda s: threads_from_markdown_dir(directory, s.max_file_bytes))
