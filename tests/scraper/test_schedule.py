"""The scheduled sync (``HINDSIGHT_SCRAPE_EVERY``) on a real Redis: off by default, queues a scrape
run on its period, and never a second one while a run holds the lock."""

from __future__ import annotations

import threading
from datetime import timedelta

import redis

from services.scraper.schedule import run_schedule, start_scheduled_sync, sync_once
from shared.contracts import ScrapeRequest
from shared.redis_keys import SCRAPE_LOCK_KEY, scrape_job_key
from shared.scrape_runs import release_lock
from shared.settings import ScrapingSettings, Settings, TaskSettings


def test_the_schedule_is_off_unless_configured() -> None:
    assert Settings().scraping.scrape_every == timedelta(0)
    assert start_scheduled_sync(ScrapingSettings(), TaskSettings()) is None
    assert Settings(scrape_every="PT6H").scraping.scrape_every == timedelta(hours=6)  # type: ignore[arg-type]


def test_a_sync_queues_one_run_and_none_while_it_holds_the_lock(redis_env: redis.Redis) -> None:
    settings, queued = TaskSettings(), list[ScrapeRequest]()

    job_id = sync_once(settings, redis_env, queued.append)
    skipped = sync_once(settings, redis_env, queued.append)

    assert job_id is not None and skipped is None
    assert redis_env.get(SCRAPE_LOCK_KEY) == job_id and redis_env.exists(scrape_job_key(job_id))
    assert [request.job_id for request in queued] == [job_id]
    release_lock(job_id, redis_env)
    assert sync_once(settings, redis_env, queued.append) not in (None, job_id)


def test_the_schedule_syncs_on_its_period_until_stopped() -> None:
    settings, tasks = ScrapingSettings(scrape_every=timedelta(seconds=0.05)), TaskSettings()
    stop = threading.Event()
    calls: list[TaskSettings] = []

    def sync(given: TaskSettings) -> None:
        calls.append(given)
        if len(calls) == 3:
            stop.set()

    run_schedule(settings, tasks, stop, sync)

    assert len(calls) == 3
