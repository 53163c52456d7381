"""The one place a Celery worker's command line is built, from :data:`shared.topology.WORKERS`.

``hindsight up``, the tests, the benchmarks and the images all start a worker through
:func:`worker_argv`; an image runs ``python -m shared.worker <name>``, which replaces itself by that
command (``python -m shared.worker indexer --loglevel INFO``: further words go to ``celery worker``
as they are, a repeated option's last value counting).

A node is named ``<name>@<host>``. The host is Celery's ``%h`` (this machine's name) unless
``WORKER_HOST`` says otherwise: the images' entry point (``deploy/worker-entrypoint.sh``)
sets it to ``<hostname>-<random>``, so scaled copies of one service are counted apart.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Literal

from shared.topology import WORKERS, Worker, worker

Pool = Literal["prefork", "threads", "solo"]
HOST_VARIABLE = "WORKER_HOST"


@dataclass(frozen=True)
class Launch:
    """How to run one worker process; ``None`` keeps the topology's (or Celery's) choice.

    ``name``: the node's name before ``@`` (several copies on one host each need their own);
    ``pool``/``concurrency``: ``solo`` runs tasks in the main process (tests kill it whole);
    ``alone``: no gossip or mingle with other workers, for a worker that needs no other's state (it
    starts faster and sends less to Redis); ``heartbeat`` off as well for a test's single worker.
    """

    name: str | None = None
    host: str = "%h"
    pool: Pool | None = None
    concurrency: int | None = None
    loglevel: str | None = None
    alone: bool = False
    heartbeat: bool = True


def worker_argv(served: Worker, launch: Launch | None = None) -> list[str]:
    """``python -m celery -A <module> worker -Q <queues> -n <name>@<host> --pool … --concurrency …``
    for ``served``, with this interpreter."""
    launch = launch or Launch()
    argv = [
        sys.executable, "-m", "celery", "-A", served.module, "worker",
        "-Q", ",".join(served.queues), "-n", f"{launch.name or served.name}@{launch.host}",
        "--pool", launch.pool or served.pool, "--concurrency", str(launch.concurrency or served.concurrency),
    ]  # fmt: skip
    if launch.loglevel:
        argv += ["--loglevel", launch.loglevel]
    if launch.alone:
        argv += ["--without-gossip", "--without-mingle"]
    if not launch.heartbeat:
        argv += ["--without-heartbeat"]
    return argv


def container_argv(name: str, extra: list[str], environ: dict[str, str]) -> list[str]:
    """The command an image runs for worker ``name``: the topology's, on the entry point's host."""
    return [*worker_argv(worker(name), Launch(host=environ.get(HOST_VARIABLE) or "%h")), *extra]


def main(args: list[str] | None = None) -> None:
    """``python -m shared.worker <name> [celery options]``: become that worker (``os.execv``)."""
    parser = argparse.ArgumentParser(prog="python -m shared.worker", description="Run one Hindsight worker.")
    names = [w.name for w in WORKERS]
    parser.add_argument("name", choices=names, help="the worker, as shared.topology names it")
    words = sys.argv[1:] if args is None else args
    name = parser.parse_args(words[:1]).name  # what follows is Celery's, ``--help`` included
    argv = container_argv(name, words[1:], dict(os.environ))
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
