"""``scrape.run`` in a real Celery worker process on a real Redis, against the replay server."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from shared.contracts import IndexRequest, ScrapeReport, ScrapeRequest
from shared.events import EventStream
from shared.settings import Settings
from shared.worker import Launch
from testing.processes import start_worker
from tests.scraper.conftest import CHROMIUM

pytestmark = [pytest.mark.integration, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker(redis_url: str, logged_in: Settings, tmp_path: Path) -> Iterator[None]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HINDSIGHT_REDIS_URL": redis_url,
        "HINDSIGHT_PERPLEXITY_BASE_URL": logged_in.scraping.perplexity_base_url,
        "HINDSIGHT_PERPLEXITY_STATE": str(logged_in.perplexity_state_path),
        "HINDSIGHT_EXPORT_DIR": str(logged_in.export_root),
        "HINDSIGHT_CHROMIUM_PATH": CHROMIUM,
        "HINDSIGHT_SCRAPE_HEADLESS": "true",
        "HINDSIGHT_SCRAPE_LIST_PAGE_SIZE": "3",
        "HINDSIGHT_SCRAPE_PAGE_DELAY_S": "0",
        "HINDSIGHT_SCRAPE_PAGE_JITTER_S": "0",
        "HINDSIGHT_SCRAPE_THREAD_DELAY_S": "0",
        "HINDSIGHT_SCRAPE_THREAD_JITTER_S": "0",
    }
    process = start_worker("scraper", Launch(pool="solo", loglevel="WARNING"), env, tmp_path / "scraper.log")
    yield
    process.terminate()
    process.wait(timeout=20)


def queued_tasks(client: redis.Redis, queue: str) -> list[tuple[str, list]]:
    """Task names and args waiting in a Redis queue, decoded from kombu's message envelope."""
    messages = [json.loads(raw) for raw in client.lrange(queue, 0, -1)]
    return [(m["headers"]["task"], json.loads(base64.b64decode(m["body"]))[0]) for m in messages]


def test_scrape_run_exports_reports_progress_and_chains_index_scan_only_on_change(
    worker: None, redis_url: str, logged_in: Settings
) -> None:
    client_app = Celery(broker=redis_url, backend=redis_url)
    client = redis.Redis.from_url(redis_url, decode_responses=True)

    def run(job_id: str) -> ScrapeReport:
        result = client_app.send_task(
            "scrape.run",
            args=[ScrapeRequest(job_id=job_id).to_payload()],
            queue="scrape",
            ignore_result=False,
        )
        return ScrapeReport.model_validate(result.get(timeout=90))

    first = run("job-1")

    assert (first.export.new, first.index_queued) == (6, True)
    index_request = IndexRequest(job_id="job-1", root=str(logged_in.export_root))
    assert queued_tasks(client, "index") == [("index.scan", [index_request.to_payload()])]
    events = [event for _, event in EventStream("job-1", client).read()]
    assert events[0].status == "started" and events[-1].stage == "scrape"
    assert any(e.status == "done" and e.data.get("new") == 6 for e in events)

    second = run("job-2")

    assert (second.export.new, second.export.unchanged, second.index_queued) == (0, 6, False)
    assert len(queued_tasks(client, "index")) == 1
