"""One export run: log in, discover, fetch what changed, write Markdown, keep the checkpoint.

A thread whose listing entry has not moved since the last write (same last query time, title,
space and query count, file still present) is not even fetched; the rest are fetched, hashed and
re-rendered only when their hash differs. ``refetch_all`` fetches every thread regardless.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from services.scraper.discovery import Pacer, discover
from services.scraper.errors import RequestFailed, ThreadGone
from services.scraper.fetch import fetch_thread
from services.scraper.models import ThreadSummary
from services.scraper.session import BrowserSession, scrape_session
from services.scraper.thread_parse import build_thread
from services.scraper.writer import SiteCount, ThreadWriter, WriteOutcome, tally
from shared.contracts import ExportReport
from shared.settings import ScrapingSettings

log = logging.getLogger(__name__)

Progress = Callable[[str, dict[str, Any]], object]
PROGRESS_EVERY = 25


def _no_progress(detail: str, data: dict[str, Any]) -> None:
    log.info("%s", detail)


def counts(report: ExportReport) -> dict[str, Any]:
    return report.model_dump(exclude={"failures", "written", "kept_once", "export_dir"})


class LibraryExporter:
    def __init__(
        self,
        settings: ScrapingSettings,
        state: Path,
        export_root: Path,
        progress: Progress | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        """Exports with the login saved in ``state`` into ``export_root``."""
        self.settings = settings
        self.state = state
        self.progress = progress or _no_progress
        self.sleep = sleep
        self.report = ExportReport(export_dir=str(export_root))
        self.writer = ThreadWriter(export_root)
        self._requested_any = False
        self.thread_pacer = Pacer(settings.scrape_thread_delay_s, settings.scrape_thread_jitter_s, sleep)

    def run(self, refetch_all: bool = False) -> ExportReport:
        try:
            with scrape_session(self.settings, self.state) as session:
                pacer = Pacer(
                    self.settings.scrape_page_delay_s,
                    self.settings.scrape_page_jitter_s,
                    self.sleep,
                )
                library = discover(session.client, self.settings.scrape_list_page_size, pacer)
                summaries = library.threads
                self.report.discovered = len(summaries)
                claim = (
                    f" (the listing claims {library.claimed_total})"
                    if library.claimed_total not in (None, len(summaries))
                    else ""
                )
                self.progress(f"found {len(summaries)} threads{claim}", counts(self.report))
                for index, summary in enumerate(summaries, start=1):
                    self.export_thread(session, summary, refetch_all)
                    if index % PROGRESS_EVERY == 0:
                        self.progress(f"{index}/{len(summaries)} threads checked", counts(self.report))
        finally:
            self.writer.close()
        return self.report

    def export_thread(self, session: BrowserSession, summary: ThreadSummary, refetch_all: bool) -> None:
        label = f"{summary.title or 'Untitled'} ({summary.uuid})"
        listing = summary.listing_fingerprint
        if not refetch_all and self.writer.is_current(summary.uuid, listing):
            self.report.unchanged += 1
            return
        if not refetch_all and self.writer.known_gone(summary.uuid, listing):
            self.report.gone += 1
            return
        if self._requested_any:
            self.thread_pacer.pause()
        self._requested_any = True
        try:
            raw = fetch_thread(session.client, summary.slug or summary.uuid)
        except ThreadGone as exc:
            self.report.gone += 1
            self.report.failures.append(f"{label}: gone ({exc})")
            self.writer.mark_gone(summary.uuid, listing)
            return
        except RequestFailed as exc:
            self.report.failed += 1
            self.report.failures.append(f"{label}: {exc}")
            log.warning("skipping %s: %s", label, exc)
            return
        self.report.fetched += 1
        thread = build_thread(raw.entries, raw.metadata, summary, self.settings.perplexity_base_url)
        if not thread.turns:
            self.report.failed += 1
            self.report.failures.append(f"{label}: the thread came back without entries")
            return
        site = SiteCount(turns=summary.query_count, complete=raw.complete)
        outcome, relpath = self.writer.write(thread, listing, site=site)
        tally(self.report, outcome, relpath)
        if outcome in (WriteOutcome.NEW, WriteOutcome.CHANGED):
            self.progress(f"{outcome.value}: {relpath}", counts(self.report))


def export_library(
    settings: ScrapingSettings,
    state: Path,
    export_root: Path,
    *,
    refetch_all: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Export the whole library into ``export_root`` with the login saved in ``state``; see
    :class:`ExportReport` for counts."""
    return LibraryExporter(settings, state, export_root, progress).run(refetch_all)
