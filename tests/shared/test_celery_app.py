"""Routing by task name, JSON only, and the reliability switches every worker inherits."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

from shared.celery_app import _configure_question_workers, app
from shared.settings import get_settings
from shared.topology import QUESTION_QUEUES, TASK_QUEUES, WORKERS


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


def test_only_results_someone_reads_are_stored() -> None:
    annotations = app.conf.task_annotations
    stored = {name for name in TASK_QUEUES if not annotations[name]["ignore_result"]}
    assert stored == {"synthesize.map", "index.batch", "retrieve.query", "scrape.library_check"}
    importlib.import_module("services.synthesizer.tasks")  # its tasks take their annotations
    ignored = {name: app.tasks[name].ignore_result for name in TASK_QUEUES if name.startswith("synthesize.")}
    assert ignored == {"synthesize.fan_out": True, "synthesize.map": False, "synthesize.reduce": True}


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


def test_every_task_has_a_soft_and_a_hard_time_limit_below_the_visibility_timeout_of_its_queue() -> None:
    settings = get_settings()
    for worker in WORKERS:
        importlib.import_module(worker.module)
    for name, queue in TASK_QUEUES.items():
        task = app.tasks[name]
        question = queue in QUESTION_QUEUES
        visibility = (
            settings.tasks.question_visibility_timeout_s
            if question
            else settings.tasks.broker_visibility_timeout_s
        )
        assert 0 < task.soft_time_limit < task.time_limit < visibility, name
