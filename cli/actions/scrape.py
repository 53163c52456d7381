"""Get Perplexity threads into the export folder: scrape the site with a browser, or import
Perplexity's own export files (no browser at all).

Each action prints what it did and returns the export's counts; a :class:`ScraperError` carries the
message the user needs (what to install, how to log in).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cli.console import console
from services.scraper import (
    Thread,
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
    for line in report.failures:
        console.print(f"  [yellow]![/] {line}", soft_wrap=True)


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


def scrape(settings: Settings, login: bool = False, refetch_all: bool = False) -> ExportReport:
    """Export the library (logging in first when asked or never done); only new or changed threads
    are written."""
    if login or not settings.perplexity_state_path.exists():
        log_in(settings)
    report = export_library(settings, refetch_all=refetch_all)
    print_report(report)
    return report


def import_threads(settings: Settings, load: Callable[[Settings], list[Thread]]) -> ExportReport:
    report = write_threads(load(settings), settings.export_root)
    print_report(report)
    return report


def import_data_export(settings: Settings, file: Path) -> ExportReport:
    """Perplexity's bulk data-request JSON."""
    return import_threads(settings, lambda s: threads_from_data_export(file, s.perplexity_base_url))


def import_markdown_dir(settings: Settings, directory: Path) -> ExportReport:
    """Per-thread Markdown downloaded from Perplexity (``Title.md``, ``Title(2).md``, ...)."""
    return import_threads(settings, lambda _settings: threads_from_markdown_dir(directory))
