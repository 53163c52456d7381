"""Routing by task name, JSON only, and the reliability switches every worker inherits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from shared.celery_app import _configure_question_workers, app


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
    ("queues", "question_worker"),
    [
        (["rerank"], True),
        (["map"], True),
        ("rerank,map", True),
        (["retrieve"], True),
        (["map", "reduce"], True),
        (["index"], False),
        (["scrape"], False),
        (["retrieve", "index"], False),
        ([], False),
    ],
)
def test_question_workers_prefetch_one_and_redeliver_from_their_own_short_unacked_set(
    queues: object, question_worker: bool
) -> None:
    conf = SimpleNamespace(
        worker_prefetch_multiplier=4, broker_transport_options={"visibility_timeout": 3600}
    )
    _configure_question_workers(conf=conf, options={"queues": queues})
    options = conf.broker_transport_options
    if question_worker:
        assert conf.worker_prefetch_multiplier == 1
        assert options["visibility_timeout"] == 300 and options["unacked_restore_throttle"] == 1
        assert {options[k] for k in ("unacked_key", "unacked_index_key", "unacked_mutex_key")}.isdisjoint(
            {"unacked", "unacked_index", "unacked_mutex"}
        ), "a question sweep must never see (and restore) a long index or scrape task"
    else:
        assert conf.worker_prefetch_multiplier == 4
        assert options == {"visibility_timeout": 3600}
