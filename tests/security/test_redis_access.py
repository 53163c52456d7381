"""F1 and F4: the local stack's Redis lets no one in without the generated password, the
application's own user cannot wipe, stop or reconfigure it, and what the stack writes is private.
The outsider is the unprivileged ``nobody`` account."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from cli.local_stack import LocalStack, ProcessSpec, redis_answers, redis_socket, redis_spec, wait_until
from shared.redis_auth import celery_url
from shared.settings import Settings
from shared.topology import INDEX_SCAN
from shared.topology import worker as topology_worker
from shared.worker import Launch, worker_argv
from testing.processes import free_port
from tests.conftest import REPO
from tests.security.outsider import as_nobody

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalStack, dict[str, str]]]:
    """The stack's own Redis, started as ``hindsight up`` starts it, on a free port."""
    if os.geteuid() != 0:
        pytest.skip("switching to the nobody user needs root")
    data_dir = tmp_path_factory.mktemp("stack") / "data"
    settings = Settings(data_dir=data_dir, redis_url=f"redis://127.0.0.1:{free_port()}/0")
    local = LocalStack(settings)
    env = {**os.environ, "PYTHONPATH": str(REPO), **local.settings_env()}
    local.start(redis_spec(settings), env)
    try:
        wait_until(lambda: redis_answers(env["HINDSIGHT_REDIS_URL"]), 10, "redis-server")
        yield local, env
    finally:
        local.down()


def test_redis_refuses_a_local_user_without_the_password(stack: tuple[LocalStack, dict[str, str]]) -> None:
    """``nobody`` cannot even reach the socket (mode 0700 in a 0700 folder); root, who can, still
    needs the password."""
    socket = str(redis_socket(stack[0].settings))
    for command in (["PING"], ["RPUSH", "index", "{}"], ["GET", "hindsight:answer:x"], ["FLUSHALL"]):
        reply = as_nobody("redis-cli", "-s", socket, *command)
        assert "Permission denied" in reply.stdout + reply.stderr, command
        direct = subprocess.run(["redis-cli", "-s", socket, *command], capture_output=True, text=True)
        assert "NOAUTH" in direct.stdout + direct.stderr, command
    guessed = subprocess.run(
        ["redis-cli", "-s", socket, "--user", "default", "--pass", "", "PING"], capture_output=True, text=True
    )
    assert "PONG" not in guessed.stdout


def test_the_password_is_private_to_the_user_who_started_the_stack(
    stack: tuple[LocalStack, dict[str, str]],
) -> None:
    local = stack[0]
    password_file = local.settings.redis_password_file
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(local.settings.data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((local.run_dir / "redis-users.acl").stat().st_mode) == 0o600
    assert as_nobody("cat", str(password_file)).returncode != 0
    assert password_file.read_text().strip() not in (local.run_dir / "redis-users.acl").read_text()


def test_the_application_user_cannot_wipe_stop_or_reconfigure_redis(
    stack: tuple[LocalStack, dict[str, str]],
) -> None:
    client = redis.Redis.from_url(stack[1]["HINDSIGHT_REDIS_URL"])
    client.set("hindsight:probe", "kept")
    for command in (
        ("FLUSHALL",),
        ("FLUSHDB",),
        ("SHUTDOWN",),
        ("CONFIG", "SET", "dir", "/tmp"),
        ("KEYS", "*"),
    ):
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.execute_command(*command)
    assert client.get("hindsight:probe") == b"kept"


def test_children_run_with_umask_077_and_private_logs(stack: tuple[LocalStack, dict[str, str]]) -> None:
    local, env = stack
    local.start(ProcessSpec("umask-probe", [sys.executable, "-c", "import os; print(oct(os.umask(0)))"]), env)
    log = local.run_dir / "umask-probe.log"
    wait_until(lambda: log.read_text().strip() != "", 10, "the probe")
    assert log.read_text().strip() == "0o77"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(local.run_dir.stat().st_mode) == 0o700


def test_a_worker_serves_tasks_through_the_password_and_never_logs_their_results(
    stack: tuple[LocalStack, dict[str, str]], tmp_path: Path
) -> None:
    """Broker, result backend and the workers' broadcast (what the health asks) all work as the app
    user; the worker's log says the task succeeded, not what it returned."""
    local, env = stack
    url = env["HINDSIGHT_REDIS_URL"]
    launch = Launch(name="sec-indexer", pool="solo", loglevel="INFO", alone=True)
    worker = ProcessSpec("sec-indexer", worker_argv(topology_worker("indexer"), launch))
    local.start(worker, env)
    app = Celery("sec", broker=celery_url(url), backend=celery_url(url))
    wait_until(lambda: bool(app.control.inspect(timeout=1).active_queues()), 60, "the worker")
    missing = str(tmp_path / "no-such-folder-SECRET-NAME")
    scan = app.send_task(  # the scan's result is kept only when a caller asks to read it
        INDEX_SCAN, args=[{"job_id": "sec-1", "root": missing}], queue="index", ignore_result=False
    )
    report = scan.get(timeout=60)
    assert report["failed"] == 1 and "SECRET-NAME" in report["failures"][0]["reason"]
    log = local.run_dir / "sec-indexer.log"
    wait_until(lambda: "succeeded" in log.read_text(), 10, "the success line")
    assert "SECRET-NAME" not in log.read_text()
