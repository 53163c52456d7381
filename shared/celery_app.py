"""The one Celery application every service shares.

Services never import each other: they send task signatures by name (``shared.topology``), and the
topology's routing table decides the queue from the name. Each worker starts with
``celery -A services.<name>.tasks worker -Q <queue>`` and so imports only its own tasks.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import celeryd_init
from kombu import Queue

from shared.logging import install_celery_hooks
from shared.reconnect import (
    RequeueAfterReconnect,
    install_cannot_persist_as_outage,
    install_closed_connection_guard,
)
from shared.redis_auth import celery_url
from shared.redis_keys import (
    QUESTION_UNACKED_INDEX_KEY,
    QUESTION_UNACKED_KEY,
    QUESTION_UNACKED_MUTEX_KEY,
    QUESTION_UNACKED_MUTEX_LIFETIME,
)
from shared.settings import TaskSettings, get_settings
from shared.topology import (
    INDEX_BATCH,
    MAP_CHORD,
    QUESTION_CHAIN,
    QUESTION_QUEUES,
    QUEUES,
    RETRIEVE_QUERY,
    SCRAPE_LIBRARY_CHECK,
    TASK_QUEUES,
    task_routes,
)

# The tasks whose result someone reads: a chord's header (the chord's join, and the stall sweep for the
# map's), and those the gateway waits on with ``.get()``. Every other task's result is passed along
# its chain or read by no one: the result backend does not keep it (it kept each stage's whole
# payload for ``event_ttl_s``).
RESULTS_READ = frozenset({MAP_CHORD.header, INDEX_BATCH, RETRIEVE_QUERY, SCRAPE_LIBRARY_CHECK})


def task_annotations(settings: TaskSettings) -> dict[str, dict[str, Any]]:
    """Each task's time limits, and whether its result is stored (only if :data:`RESULTS_READ` names it)."""
    limits = task_time_limits(settings)
    return {task: {**limits[task], "ignore_result": task not in RESULTS_READ} for task in TASK_QUEUES}


def task_time_limits(settings: TaskSettings) -> dict[str, dict[str, int]]:
    """Each task's soft and hard time limit: a question stage's, or an index or scrape job's
    (``TaskSettings`` keeps each hard limit below the visibility timeout its messages are under)."""
    question = {
        "soft_time_limit": settings.question_soft_time_limit_s,
        "time_limit": settings.question_time_limit_s,
    }
    job = {
        "soft_time_limit": settings.job_soft_time_limit_s,
        "time_limit": settings.job_time_limit_s,
    }
    return {task: question if queue in QUESTION_QUEUES else job for task, queue in TASK_QUEUES.items()}


def create_app() -> Celery:
    settings = get_settings()
    url = celery_url(settings.redis_url)
    app = Celery("hindsight", broker=url, backend=url)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_queues=[Queue(name) for name in QUEUES],
        task_default_queue=TASK_QUEUES[QUESTION_CHAIN[0]],
        task_routes=task_routes(),
        task_annotations=task_annotations(settings.tasks),
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_track_started=True,
        worker_prefetch_multiplier=4,
        worker_hijack_root_logger=False,
        result_expires=settings.tasks.event_ttl_s,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": settings.tasks.broker_visibility_timeout_s},
        # A task finishing while Redis restarts keeps retrying to record its result (and its part of
        # a chord) instead of failing: a lost chord part would hold its whole job up for good.
        result_backend_always_retry=True,
        result_backend_max_retries=30,
    )
    app.steps["consumer"].add(RequeueAfterReconnect)
    install_closed_connection_guard()
    install_cannot_persist_as_outage()
    return app


def question_transport_options(settings: TaskSettings) -> dict[str, Any]:
    """Kombu's Redis options for a worker that serves only question stages.

    Redis hands a message out again once it has sat unacknowledged for the visibility timeout, but
    only when a consumer sweeps the unacked set whose key it was filed under. Question workers file
    their messages under keys of their own, with a short timeout and a sweep every few seconds, so a
    question whose worker was killed resumes within ``question_visibility_timeout_s``; scrape and index
    messages stay under kombu's default keys with the long timeout, and a long scrape is never re-run
    because a short timeout passed.
    """
    return {
        "visibility_timeout": settings.question_visibility_timeout_s,
        "unacked_key": QUESTION_UNACKED_KEY,
        "unacked_index_key": QUESTION_UNACKED_INDEX_KEY,
        "unacked_mutex_key": QUESTION_UNACKED_MUTEX_KEY,
        # A sweep takes milliseconds; a worker killed during one must not block every sweep for
        # kombu's default five minutes.
        "unacked_mutex_expire": QUESTION_UNACKED_MUTEX_LIFETIME.ttl_s(settings),
        "unacked_restore_interval": settings.question_restore_interval_s,
        "unacked_restore_throttle": 1,
    }


def worker_queues(options: Any) -> set[str]:
    queues = (options or {}).get("queues") or []
    if isinstance(queues, str):
        queues = queues.split(",")
    return set(queues)


@celeryd_init.connect
def _configure_question_workers(conf: Any = None, options: Any = None, **_: Any) -> None:
    """A worker serving only question queues prefetches one message and redelivers within minutes.

    One message at a time: a second worker picks up the next instead of it waiting behind the first,
    and the queue depth the gateway's backpressure reads is the real backlog.
    """
    queues = worker_queues(options)
    if queues and queues <= set(QUESTION_QUEUES) and conf is not None:
        conf.worker_prefetch_multiplier = 1
        conf.broker_transport_options = question_transport_options(get_settings().tasks)


app = create_app()
install_celery_hooks()
