"""Routing by task name, JSON only, and the reliability switches every worker inherits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from shared.celery_app import _single_prefetch_for_heavy_queues, app


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("scrape.run", "scrape"),
        ("index.scan", "index"),
        ("index.batch", "index"),
        ("retrieve.plan", "retrieve"),
        ("retrieve.search", "retrieve"),
        ("rerank.score", "rerank"),
        ("synthesize.map", "map"),
        ("synthesize.reduce", "reduce"),
        ("synthesize.fan_out", "reduce"),
    ],
)
def test_tasks_route_to_their_queue_by_name(task: str, queue: str) -> None:
    route = app.amqp.router.route({}, task)
    assert route["queue"].name == queue


def test_only_json_crosses_the_broker_and_tasks_ack_late() -> None:
    assert app.conf.task_serializer == "json"
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost


@pytest.mark.parametrize(
    ("queues", "expected"),
    [(["rerank"], 1), (["map"], 1), ("rerank,map", 1), (["retrieve"], 4), (["map", "reduce"], 4)],
)
def test_workers_serving_only_heavy_queues_prefetch_one_message(queues: object, expected: int) -> None:
    conf = SimpleNamespace(worker_prefetch_multiplier=4)
    _single_prefetch_for_heavy_queues(conf=conf, options={"queues": queues})
    assert conf.worker_prefetch_multiplier == expected
