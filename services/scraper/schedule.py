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
from shared.settings import ScrapingSettings, TaskSettings

log = logging.getLogger(__name__)


def sync_once(
    settings: TaskSettings,
    client: redis.Redis | None = None,
    enqueue: Callable[[ScrapeRequest], None] = enqueue_scrape,
) -> str | None:
    """Queue a scrape run and return its job id; ``None`` when a run is already going."""
    client = client or redis_client()
    job_id = uuid.uuid4().hex
    running = try_lock(job_id, settings, client)
    if running:
        log.info("scheduled sync skipped: scrape job %s is still running", running)
        return None
    client.set(scrape_job_key(job_id), "1", ex=scrape_job_key.lifetime.ttl_s(settings))
    enqueue(ScrapeRequest(job_id=job_id))
    log.info("scheduled sync queued scrape job %s", job_id)
    return job_id


def run_schedule(
    settings: ScrapingSettings,
    tasks: TaskSettings,
    stop: threading.Event,
    sync: Callable[[TaskSettings], object] = sync_once,
) -> None:
    """Call ``sync`` every period until ``stop`` is set; a failed sync is logged and retried next time."""
    period = settings.scrape_every.total_seconds()
    while not stop.wait(period):
        try:
            sync(tasks)
        except Exception:
            log.exception("scheduled sync failed; trying again in %.0fs", period)


def start_scheduled_sync(settings: ScrapingSettings, tasks: TaskSettings) -> threading.Event | None:
    """Start the schedule in a daemon thread when one is configured; set the returned event to stop it."""
    if settings.scrape_every.total_seconds() <= 0:
        return None
    stop = threading.Event()
    thread = threading.Thread(
        target=run_schedule, args=(settings, tasks, stop), name="scrape-schedule", daemon=True
    )
    thread.start()
    log.info("scheduled sync every %s", settings.scrape_every)
    return stop
