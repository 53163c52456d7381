"""One scrape at a time: the lock ``POST /v1/scrape`` (and the scheduled sync) takes, the scrape job
releases, and the task that starts a run.

The lock holds the running job's id and expires after the job's hard time limit, so a worker killed
mid-run cannot block scraping for longer than that. Only the job holding it releases it.
"""

from __future__ import annotations

import redis

from shared.celery_app import app
from shared.contracts import ScrapeRequest
from shared.events import redis_client
from shared.redis_keys import SCRAPE_LOCK_KEY, SCRAPE_LOCK_LIFETIME
from shared.settings import TaskSettings
from shared.topology import SCRAPE_RUN

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def try_lock(job_id: str, settings: TaskSettings, client: redis.Redis | None = None) -> str | None:
    """Take the lock for ``job_id``; ``None`` when taken, else the id of the job already running."""
    client = client or redis_client()
    if client.set(SCRAPE_LOCK_KEY, job_id, nx=True, ex=SCRAPE_LOCK_LIFETIME.ttl_s(settings)):
        return None
    holder = client.get(SCRAPE_LOCK_KEY)
    return str(holder) if holder else try_lock(job_id, settings, client)


def release_lock(job_id: str, client: redis.Redis | None = None) -> None:
    """Release the lock if ``job_id`` holds it."""
    (client or redis_client()).eval(_RELEASE, 1, SCRAPE_LOCK_KEY, job_id)


def enqueue_scrape(request: ScrapeRequest) -> None:
    """Queue ``scrape.run`` (export the library, then index what changed)."""
    app.signature(SCRAPE_RUN, args=[request.to_payload()]).apply_async()
