"""``shared.worker`` builds every worker's command line from the topology: the local stack's, the
images' (``python -m shared.worker <name>``) and the tests'."""

from __future__ import annotations

import itertools
import subprocess
import sys

from shared.topology import WORKERS, worker
from shared.worker import Launch, container_argv, worker_argv
from tests.conftest import REPO


def options(argv: list[str]) -> dict[str, str]:
    return dict(itertools.pairwise(argv))


def test_each_workers_command_carries_its_topology_module_queues_name_pool_and_concurrency() -> None:
    for served in WORKERS:
        argv = worker_argv(served)
        assert argv[:3] == [sys.executable, "-m", "celery"]
        assert options(argv)["-A"] == served.module and "worker" in argv
        assert options(argv)["-Q"] == ",".join(served.queues)
        assert options(argv)["-n"] == f"{served.name}@%h"
        assert options(argv)["--pool"] == served.pool
        assert options(argv)["--concurrency"] == str(served.concurrency)


def test_a_launch_renames_the_node_and_overrides_pool_concurrency_and_cluster_chatter() -> None:
    launch = Launch(
        name="indexer-7", pool="solo", concurrency=1, loglevel="INFO", alone=True, heartbeat=False
    )
    argv = worker_argv(worker("indexer"), launch)

    assert options(argv)["-n"] == "indexer-7@%h"
    assert options(argv)["--pool"] == "solo" and options(argv)["--concurrency"] == "1"
    assert options(argv)["--loglevel"] == "INFO"
    assert {"--without-gossip", "--without-mingle", "--without-heartbeat"} <= set(argv)


def test_a_containers_node_is_named_on_the_entry_points_host_and_extra_options_come_last() -> None:
    argv = container_argv("mapper", ["--concurrency", "3"], {"WORKER_HOST": "box-1a2b3c4d"})

    assert options(argv)["-n"] == "mapper@box-1a2b3c4d"
    assert argv[-2:] == ["--concurrency", "3"]  # Celery takes a repeated option's last value
    assert options(container_argv("mapper", [], {}))["-n"] == "mapper@%h"


def test_an_unknown_worker_is_refused_with_the_names_there_are_and_no_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "shared.worker", "mappr"], cwd=REPO, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 2
    assert "invalid choice: 'mappr'" in result.stderr and "mapper" in result.stderr
    assert "Traceback" not in result.stderr


def test_python_dash_m_shared_worker_becomes_celery_worker_of_that_service() -> None:
    """The images' command replaces itself by Celery's worker command (``--help`` stops it there)."""
    result = subprocess.run(
        [sys.executable, "-m", "shared.worker", "reducer", "--help"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-2000:]
    assert "celery worker" in result.stdout and "--concurrency" in result.stdout
