"""The scheduled sync: every ``HINDSIGHT_SCRAPE_EVERY`` (seconds or ISO 8601, e.g. ``PT6H``; off by
default), the scrape worker queues a run of export and index, unless one is already running.

Each scrape worker process runs the schedule; the run lock keeps their runs from overlapping.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable

import redis

from shared.contracts import ScrapeRequest
from shared.events import redis_client
from shared.redis_keys import scrape_job_key
from shared.scrape_runs import enqueue_scrape, try_lock
from shared.settings import Settings

log = logging.getLogger(__name__)


def sync_once(
    settings: Settings,
    client: redis.Redis | None = None,
    enqueue: Callable[[ScrapeRequest], None] = enqueue_scrape,
) -> str | None:
    """Queue a scrape run and return its job id; ``None`` when a run is already going."""
    client = client or redis_client(settings.redis_url)
    job_id = uuid.uuid4().hex
    running = try_lock(job_id, settings, client)
    if running:
        log.info("scheduled sync skipped: scrape job %s is still running", running)
        return None
    client.set(scrape_job_key(job_id), "1", ex=scrape_job_key.lifetime.ttl_s(settings.tasks))
    enqueue(ScrapeRequest(job_id=job_id))
    log.info("scheduled sync queued scrape job %s", job_id)
    return job_id


def run_schedule(
    settings: Settings, stop: threading.Event, sync: Callable[[Settings], object] = sync_once
) -> None:
    """Call ``sync`` every period until ``stop`` is set; a failed sync is logged and retried next time."""
    period = settings.scraping.scrape_every.total_seconds()
    while not stop.wait(period):
        try:
            sync(settings)
        except Exception:
            log.exception("scheduled sync failed; trying again in %.0fs", period)


def start_scheduled_sync(settings: Settings) -> threading.Event | None:
    """Start the schedule in a daemon thread when one is configured; set the returned event to stop it."""
    if settings.scraping.scrape_every.total_seconds() <= 0:
        return None
    stop = threading.Event()
    threading.Thread(target=run_schedule, args=(settings, stop), name="scrape-schedule", daemon=True).start()
    log.info("scheduled sync every %s", settings.scraping.scrape_every)
    return stop
