"""Celery edge of the scraper: validate the payload, run the job, release the run lock, return the
report; read the export folder back for the library check. The scheduled sync
(``HINDSIGHT_SCRAPE_EVERY``) starts with the worker."""

from __future__ import annotations

from typing import Any

from celery.signals import worker_ready

from services.scraper.job import run_scrape_job
from services.scraper.library import check_library
from services.scraper.schedule import start_scheduled_sync
from shared.celery_app import app
from shared.contracts import ScrapeRequest
from shared.events import EventStream
from shared.scrape_runs import release_lock
from shared.settings import get_settings
from shared.tasking import enqueue_index
from shared.topology import SCRAPE_LIBRARY_CHECK, SCRAPE_RUN


@app.task(name=SCRAPE_RUN)
def run(payload: dict[str, Any]) -> dict[str, Any]:
    request = ScrapeRequest.model_validate(payload)
    try:
        settings = get_settings()
        report = run_scrape_job(
            request,
            settings.scraping,
            EventStream(request.job_id),
            enqueue_index,
            state=settings.perplexity_state_path,
            export_root=settings.export_root,
            roots_file=settings.roots_file,
        )
    finally:
        release_lock(request.job_id)
    return report.to_payload()


@app.task(name=SCRAPE_LIBRARY_CHECK)
def library_check() -> dict[str, Any]:
    settings = get_settings()
    return check_library(settings.export_root, settings.indexing.max_file_bytes).to_payload()


@worker_ready.connect
def _start_schedule(**_: Any) -> None:
    start_scheduled_sync(get_settings().scraping, get_settings().tasks)
