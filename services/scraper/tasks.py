"""Celery edge of the scraper: validate the payload, run the job, return the report."""

from __future__ import annotations

from typing import Any

from services.scraper.job import run_scrape_job
from shared.celery_app import app
from shared.contracts import ScrapeRequest
from shared.events import EventStream
from shared.settings import get_settings
from shared.tasking import enqueue_index
from shared.topology import SCRAPE_RUN


@app.task(name=SCRAPE_RUN)
def run(payload: dict[str, Any]) -> dict[str, Any]:
    request = ScrapeRequest.model_validate(payload)
    report = run_scrape_job(request, get_settings(), EventStream(request.job_id), enqueue_index)
    return report.to_payload()
