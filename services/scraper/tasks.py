"""Celery edge of the scraper: validate the payload, run the job, return the report."""

from __future__ import annotations

from typing import Any

from services.scraper.job import run_scrape_job
from shared.celery_app import app
from shared.contracts import IndexRequest, ScrapeRequest
from shared.events import EventStream
from shared.settings import get_settings


def _enqueue_index(request: IndexRequest) -> None:
    app.signature("index.scan", args=[request.to_payload()]).apply_async()


@app.task(name="scrape.run")
def run(payload: dict[str, Any]) -> dict[str, Any]:
    request = ScrapeRequest.model_validate(payload)
    report = run_scrape_job(request, get_settings(), EventStream(request.job_id), _enqueue_index)
    return report.to_payload()
