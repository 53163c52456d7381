"""The ``scrape.run`` job: export, report progress, and hand changed files to the indexer.

Its events go to the job's stream under the ``scrape`` stage; the ``done`` event's data carries the
export's counts and ``index_queued``. When a file changed, the export folder is made a root
Hindsight may read (if it is not one yet) and, once that ``done`` event is written, ``index.scan`` of
it is queued under the same job id, so one stream shows the export and then the indexing (an index
job that finds nothing to do can never end the stream before the export's ``done``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from services.scraper.exporter import counts, export_library
from shared.contracts import IndexRequest, ScrapeReport, ScrapeRequest
from shared.events import EventStream
from shared.index_jobs import register_root
from shared.settings import ScrapingSettings
from shared.stage_events import Stage

STAGE = Stage.SCRAPE


def run_scrape_job(
    request: ScrapeRequest,
    settings: ScrapingSettings,
    events: EventStream,
    enqueue_index: Callable[[IndexRequest], None],
    *,
    state: Path,
    export_root: Path,
    roots_file: Path,
) -> ScrapeReport:
    """Export the library (the login saved in ``state``) into ``export_root``; register that folder as
    a root in ``roots_file`` and queue ``index.scan`` of it only when a file changed."""
    with events.stage(STAGE, "exporting the Perplexity library") as stage:
        export = export_library(
            settings,
            state,
            export_root,
            refetch_all=request.refetch_all,
            progress=lambda detail, data: events.emit(STAGE, "progress", detail, data=data),
        )
        queued = export.has_changes
        root = register_root(roots_file, Path(export.export_dir)) if queued else None
        stage.detail = (
            f"{export.discovered} threads: {export.new} new, {export.changed} changed, "
            f"{export.unchanged} unchanged, {export.gone} gone, {export.failed} failed"
            + (f"; indexing {len(export.written)} written files" if queued else "; nothing to index")
        )
        stage.data = {**counts(export), "failures": export.failures, "index_queued": queued}
    if root is not None:  # after the stage's done event: the stream shows the export end, then the index
        enqueue_index(IndexRequest(job_id=request.job_id, root=str(root)))
    return ScrapeReport(job_id=request.job_id, export=export, index_queued=queued)
