"""Get Perplexity threads into the export folder: scrape the site with a browser, or import
Perplexity's own export files (no browser at all); then index the folder through the gateway.

Each action prints what it did and returns the export's counts; a :class:`ScraperError` carries the
message the user needs (what to install, how to log in). Scraping is the gateway's scrape job
(``POST /v1/scrape``), as the page and the scheduled sync start it: the scrape worker exports with
its own settings and queues the indexing of what changed, shown with the same progress bar as
``hindsight index``. Only the login runs here, in a browser window on this machine; imports read
local files and write the export folder here.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cli.actions.index import follow_job, render_report
from cli.client import GatewayClient, default_client
from cli.console import console, shown
from services.scraper import (
    DATA_EXPORT_MAX_BYTES,
    Imported,
    ScraperError,
    interactive_login,
    threads_from_data_export,
    threads_from_markdown_dir,
    write_threads,
)
from shared.contracts import Event, ExportReport, ScanReport
from shared.settings import Settings, get_settings

SCRAPE_STAGE = "scrape"
INDEX_STAGE = "index"
AGAIN = "run `hindsight scrape` again"


def settings_for(export_dir: Path | None) -> Settings:
    """The settings, with the export folder the command line named."""
    settings = get_settings()
    return settings.replace(export_dir=export_dir) if export_dir else settings


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
            f"A browser window is open on {settings.scraping.perplexity_base_url}. Log in there (solve any "
            f"challenge); this continues by itself within {settings.scraping.scrape_login_timeout_s:.0f}s.",
            soft_wrap=True,
        )

    user = interactive_login(settings.scraping, settings.perplexity_state_path, explain)
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


@dataclass
class ScrapeJob:
    """What the scrape job's stream said: the export's ``done`` event and the report of the index job
    it queued. That job may end before the export's ``done`` event is written (when nothing it read
    changed), so either may come first; the stream ends with the later one."""

    export: Event | None = None
    indexed: ScanReport | None = None

    def heard(self, event: Event) -> Event:
        """Keep the events that end the export or the indexing; a failed export raises
        :class:`ScraperError` with the worker's sentence."""
        if event.stage == SCRAPE_STAGE and event.status == "failed":
            raise ScraperError(event.detail)
        if event.stage == SCRAPE_STAGE and event.status == "done":
            self.export = event
        if event.stage == INDEX_STAGE and event.status in ("done", "failed") and event.data:
            self.indexed = ScanReport.model_validate(event.data)
        return event

    def report(self, export_dir: Path) -> ExportReport:
        """The export's counts, as ``done`` carries them; the export folder is the one configured here."""
        if self.export is None:
            raise ScraperError(
                "the scrape job's events ended before its export did: run `hindsight scrape` again"
            )
        counts = {k: v for k, v in self.export.data.items() if k != "index_queued"}
        return ExportReport.model_validate({**counts, "export_dir": str(export_dir)})


def scrape(
    settings: Settings,
    login: bool = False,
    refetch_all: bool = False,
    *,
    index: bool = True,
    client: GatewayClient | None = None,
) -> ExportReport:
    """Log in first when asked or never done, then run the scrape job through the gateway: print the
    export's counts, then (unless ``index`` is false: the indexing goes on without being shown)
    follow the indexing of what changed and print its report. Only new or changed threads are
    written. A failed export raises :class:`ScraperError` with the worker's sentence; a refusal or an
    unreachable gateway, :class:`cli.client.GatewayError` or ``httpx.TransportError``."""
    if login or not settings.perplexity_state_path.exists():
        log_in(settings)
    client = client or default_client()
    job = ScrapeJob()
    events = (job.heard(event) for event in client.scrape_events(client.scrape(refetch_all)))
    first_of_index = exporting(events)
    if job.export is not None:
        print_report(job.report(settings.export_root))
        if not index or not job.export.data.get("index_queued"):
            return job.report(settings.export_root)
    follow_job(itertools.chain(first_of_index, events))  # a late ``done`` of the export is heard here
    if first_of_index:
        print_report(job.report(settings.export_root))
    if job.indexed is not None:
        render_report(job.indexed)
    return job.report(settings.export_root)


def exporting(events: Iterator[Event]) -> list[Event]:
    """Show the export's progress until its ``done`` event, or until the index job's first event
    comes before it (returned, for the progress bar)."""
    with console.status("exporting the Perplexity library") as status:
        for event in events:
            if event.stage != SCRAPE_STAGE:
                return [event]
            if event.status == "progress":
                status.update(f"exporting the Perplexity library: {event.detail}")
            if event.status == "done":
                return []
    return []


def import_threads(settings: Settings, load: Callable[[Settings], Imported]) -> ExportReport:
    report = write_threads(load(settings), private_export_folder(settings))
    print_report(report)
    return report


def import_data_export(settings: Settings, file: Path) -> ExportReport:
    """Perplexity's bulk data-request JSON."""
    return import_threads(
        settings,
        lambda s: threads_from_data_export(
            file, s.scraping.perplexity_base_url, max(s.indexing.max_file_bytes, DATA_EXPORT_MAX_BYTES)
        ),
    )


def import_markdown_dir(settings: Settings, directory: Path) -> ExportReport:
    """Per-thread Markdown downloaded from Perplexity (``Title.md``, ``Title(2).md``, ...)."""
    return import_threads(settings, lambda s: threads_from_markdown_dir(directory, s.indexing.max_file_bytes))
