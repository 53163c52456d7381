"""The topology is the one list of tasks, queues and workers, and everything that runs agrees with it:
the tasks each worker module registers, Celery's routing, the local stack, the Dockerfile and compose."""

from __future__ import annotations

import importlib
import itertools
import re
import shlex

import yaml

from cli.local_stack import worker_specs
from shared.celery_app import app
from shared.topology import (
    MAP_CHORD,
    QUESTION_CHAIN,
    QUESTION_QUEUES,
    REQUIRED_QUEUES,
    TASK_QUEUES,
    WORKERS,
    Queue,
    Worker,
)
from shared.worker import container_argv
from tests.conftest import REPO


def registered_tasks(module: str) -> set[str]:
    """The tasks the services define, once ``module`` is imported (Celery's own and tests' left out)."""
    importlib.import_module(module)
    return {name for name, task in app.tasks.items() if task.__module__.startswith("services.")}


def test_every_worker_module_registers_only_tasks_of_the_topology_and_each_task_has_a_worker() -> None:
    registered = set().union(*(registered_tasks(w.module) for w in WORKERS))
    assert registered == set(TASK_QUEUES)
    for task, queue in TASK_QUEUES.items():
        serving = [w for w in WORKERS if queue in w.queues]
        assert serving, f"no worker consumes {queue}, where {task} goes"
        assert task in registered_tasks(serving[0].module), f"{serving[0].module} does not define {task}"


def test_each_worker_module_exposes_the_shared_app_for_celery_dash_a() -> None:
    for worker in WORKERS:
        assert importlib.import_module(worker.module).app is app, worker.module


def test_celery_routes_each_task_to_its_topology_queue() -> None:
    for task, queue in TASK_QUEUES.items():
        assert app.amqp.router.route({}, task)["queue"].name == queue


def test_question_queues_are_the_queues_of_the_chain_and_its_chord_and_index_is_not_one() -> None:
    stages = (*QUESTION_CHAIN, MAP_CHORD.header, MAP_CHORD.body)
    assert set(QUESTION_QUEUES) == {TASK_QUEUES[t] for t in stages}
    assert Queue.INDEX not in QUESTION_QUEUES and Queue.SCRAPE not in QUESTION_QUEUES


def test_health_waits_for_every_queue_but_the_scrapers() -> None:
    assert set(REQUIRED_QUEUES) == set(Queue) - {Queue.SCRAPE}


def parsed_worker_command(argv: list[str]) -> tuple[str, str, tuple[str, ...], str]:
    """(module, worker name, queues, pool) of a ``celery -A <module> worker`` command line."""
    options = dict(itertools.pairwise(argv))
    name = options["-n"].split("@")[0]
    return options["-A"], name, tuple(options["-Q"].split(",")), options.get("--pool", "prefork")


def as_command(worker: Worker) -> tuple[str, str, tuple[str, ...], str]:
    return worker.module, worker.name, tuple(worker.queues), worker.pool


def test_local_stack_starts_every_always_on_worker_as_the_topology_declares_it() -> None:
    started = [parsed_worker_command(s.argv) for s in worker_specs() if "celery" in s.argv]
    assert started == [as_command(w) for w in WORKERS if w.always_on]


def dockerfile_commands() -> dict[str, list[str]]:
    """Each Dockerfile target's ``CMD`` as an argv list."""
    commands: dict[str, list[str]] = {}
    target = None
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if found := re.match(r"FROM \S+ AS (\S+)", line):
            target = found.group(1)
        elif line.startswith("CMD ") and target:
            commands[target] = yaml.safe_load(line[4:])
    return commands


def launched(command: list[str]) -> list[str]:
    """The worker command line ``python -m shared.worker <name> …`` becomes (the entry point's host
    unset), any other command as it is."""
    if command[1:3] != ["-m", "shared.worker"]:
        return command
    return container_argv(command[3], command[4:], {})


def compose_worker_commands() -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each compose service that runs a Celery worker: its command (its own or its image's, as
    ``shared.worker`` runs it) and env."""
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    images = dockerfile_commands()
    found = {}
    for name, service in services.items():
        command = service.get("command") or images.get(service.get("build", {}).get("target"), [])
        if isinstance(command, str):
            command = shlex.split(command)
        command = launched(command)
        if "celery" in command and "worker" in command:
            found[name] = (command, service.get("environment", {}))
    return found


def test_compose_runs_each_topology_worker_with_its_module_queues_and_pool() -> None:
    """Compose and the Dockerfile belong to the deployment; their worker commands must say what the
    topology says (worker name, ``-A`` module, ``-Q`` queues, pool), and the healthcheck's name too."""
    commands = compose_worker_commands()
    assert set(commands) == {w.name for w in WORKERS}
    for worker in WORKERS:
        argv, environment = commands[worker.name]
        assert parsed_worker_command(argv) == as_command(worker)
        assert argv[argv.index("--concurrency") + 1] == str(worker.concurrency)
        assert environment.get("WORKER_NAME") == worker.name


def test_no_image_or_compose_service_spells_a_worker_command_line() -> None:
    """Every worker the deployment runs is ``python -m shared.worker <name>``: no queue, pool or
    module is written by hand in the Dockerfile or compose."""
    images = dockerfile_commands()
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    written = [*images.values(), *(s["command"] for s in services.values() if "command" in s)]
    assert [command for command in written if "celery" in command and "worker" in command] == []
