"""A scrape job queues the indexing of what it exported only once its own ``done`` event is in the
job's stream: an index job that finds nothing to do, ending at once, could otherwise end the stream
(which follows the job until its last stage ends) before the export's counts reached anyone.

The exporter is replaced at the edge (it needs a browser and Perplexity's site, both tested in
``test_scrape_task``); the event stream and Redis are real."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from services.scraper import job
from shared.contracts import ExportReport, IndexRequest, ScrapeRequest
from shared.events import EventStream
from shared.settings import Settings


def test_the_index_is_queued_after_the_exports_done_event(
    redis_env: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export_dir = tmp_path / "perplexity"
    export_dir.mkdir()
    changed = ExportReport(export_dir=str(export_dir), discovered=2, new=1, written=["a.md"])
    monkeypatch.setattr(job, "export_library", lambda *args, **kwargs: changed)
    settings = Settings(data_dir=tmp_path / "data", roots=[tmp_path])
    events = EventStream("scrape-job", redis_env)
    seen_when_queued: list[tuple[str, str]] = []

    def enqueue_index(request: IndexRequest) -> None:
        seen_when_queued.extend((event.stage, event.status) for _, event in events.read())

    report = job.run_scrape_job(
        ScrapeRequest(job_id="scrape-job"),
        settings.scraping,
        events,
        enqueue_index,
        state=settings.perplexity_state_path,
        export_root=settings.export_root,
        roots_file=settings.roots_file,
    )
    assert report.index_queued
    assert seen_when_queued[-1] == ("scrape", "done")
