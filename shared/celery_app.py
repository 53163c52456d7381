"""The one Celery application every service shares.

Services never import each other: they send task signatures by name (``"rerank.score"``), and the
routing table below decides the queue from the name. Each worker starts with
``celery -A services.<name>.tasks worker -Q <queue>`` and so imports only its own tasks.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import celeryd_init
from kombu import Queue

from shared.logging import install_celery_hooks
from shared.settings import get_settings

QUEUES = ("scrape", "index", "retrieve", "rerank", "map", "reduce")

TASK_ROUTES = {
    "scrape.*": {"queue": "scrape"},
    "index.*": {"queue": "index"},
    "retrieve.*": {"queue": "retrieve"},
    "rerank.*": {"queue": "rerank"},
    "synthesize.map": {"queue": "map"},
    "synthesize.*": {"queue": "reduce"},
}

# Queues whose tasks are heavy and long: a worker takes one message at a time so a second
# worker can pick up the next instead of it waiting behind the first.
SINGLE_PREFETCH_QUEUES = frozenset({"rerank", "map"})


def create_app() -> Celery:
    settings = get_settings()
    app = Celery("hindsight", broker=settings.redis_url, backend=settings.redis_url)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_queues=[Queue(name) for name in QUEUES],
        task_default_queue="retrieve",
        task_routes=TASK_ROUTES,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_track_started=True,
        worker_prefetch_multiplier=4,
        worker_hijack_root_logger=False,
        result_expires=settings.event_ttl_s,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": settings.broker_visibility_timeout_s},
    )
    return app


@celeryd_init.connect
def _single_prefetch_for_heavy_queues(conf: Any = None, options: Any = None, **_: Any) -> None:
    """Prefetch one message at a time on a worker that serves only ``rerank`` or ``map``."""
    queues = (options or {}).get("queues") or []
    if isinstance(queues, str):
        queues = queues.split(",")
    if queues and set(queues) <= SINGLE_PREFETCH_QUEUES and conf is not None:
        conf.worker_prefetch_multiplier = 1


app = create_app()
install_celery_hooks()
