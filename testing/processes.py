"""Real local processes for tests and benchmarks: a free loopback port, a private ``redis-server``,
a Celery worker of the topology, and polling until something is up.

Nothing here uses the Redis on 6379: each caller starts its own ``redis-server`` on a free port,
which demands a password (this process's ``REDIS_PASSWORD``, in every URL ``redis_url_for`` gives), as
the local stack's does. The test user may run every command: tests flush their databases.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import httpx
import redis

from shared.redis_auth import acl_rules, with_credentials
from shared.safe_files import write_private
from shared.topology import worker
from shared.worker import Launch, worker_argv

REPO = Path(__file__).resolve().parents[1]
REDIS_DATABASES = 256
REDIS_USER = "tests"
REDIS_PASSWORD = secrets.token_hex(16)
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


NO_PERSISTENCE = ("--save", "", "--appendonly", "no")


def redis_url_for(port: int) -> str:
    """The base URL (no database) of a Redis ``start_redis_server`` started, with the test user's password."""
    return with_credentials(f"redis://127.0.0.1:{port}", REDIS_USER, REDIS_PASSWORD)


def start_redis_server(
    workdir: Path, port: int, persistence: tuple[str, ...] = NO_PERSISTENCE
) -> subprocess.Popen[bytes]:
    """``redis-server`` on ``port`` with its files in ``workdir``; returns once it answers PING.

    Only ``REDIS_USER`` with ``REDIS_PASSWORD`` gets in (``redis_url_for(port)``)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server not found: apt-get install redis-server")
    acl_file = workdir / "users.acl"
    write_private(acl_file, acl_rules(REDIS_USER, REDIS_PASSWORD, "~* &* +@all"))
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), *persistence,
         "--databases", str(REDIS_DATABASES), "--dir", str(workdir), "--aclfile", str(acl_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(lambda: redis.Redis.from_url(redis_url_for(port)).ping(), 10, "redis-server")
    return process


def stop_redis_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as ``docker stop`` sends it: Redis writes its append-only file and exits."""
    process.terminate()
    process.wait(10)


@contextmanager
def running_redis(workdir: Path) -> Iterator[str]:
    """A throwaway ``redis-server`` on a free loopback port (never 6379); yields its base URL."""
    port = free_port()
    process = start_redis_server(workdir, port)
    try:
        yield redis_url_for(port)
    finally:
        stop_redis_server(process)


def start_worker(name: str, launch: Launch, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """The topology's worker ``name`` run as ``launch`` says, from this checkout, in a session of its
    own (``os.killpg`` stops it with its pool), its output appended to ``log``."""
    with log.open("ab") as output:
        return subprocess.Popen(
            worker_argv(worker(name), launch),
            cwd=REPO,
            env=dict(env),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_for(check: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy (connection errors count as not yet); return it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = check()
        except (OSError, redis.RedisError, httpx.HTTPError):
            value = None
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
