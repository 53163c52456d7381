"""Fixtures shared by every test folder: a private Redis, settings on temp dirs, the models.

Tests never use the Redis on 6379: each session starts its own ``redis-server`` on a free port,
so the suite runs the same on any machine.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import httpx
import pytest
import redis

if TYPE_CHECKING:
    from services.reranker.provision import ProvisionReport

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODELS_DIR = REPO / ".hindsight" / "models"
REDIS_DATABASES = 256
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def models_dir() -> Path:
    return Path(os.environ.get("HINDSIGHT_MODELS_DIR", DEFAULT_MODELS_DIR)).resolve()


def require_embedder() -> Path:
    path = models_dir() / "all-MiniLM-L6-v2" / "model_int8.onnx"
    if not path.exists():
        pytest.fail(f"embedder missing at {path}: run `hindsight models prepare` first")
    return models_dir()


NO_PERSISTENCE = ("--save", "", "--appendonly", "no")


def start_redis_server(
    workdir: Path, port: int, persistence: tuple[str, ...] = NO_PERSISTENCE
) -> subprocess.Popen[bytes]:
    """``redis-server`` on ``port`` with its files in ``workdir``; returns once it answers PING."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server not found: apt-get install redis-server")
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), *persistence,
         "--databases", str(REDIS_DATABASES), "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(lambda: redis.Redis(port=port).ping(), 10, "redis-server")
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
        yield f"redis://127.0.0.1:{port}"
    finally:
        stop_redis_server(process)


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


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``redis-server`` for the whole test session; yields its base URL."""
    with running_redis(tmp_path_factory.mktemp("redis")) as base:
        yield base


_next_database = itertools.count(1)


@pytest.fixture(scope="module")
def redis_url(redis_server: str) -> str:
    """An empty Redis database of its own for each test module, so queues never leak between them."""
    url = f"{redis_server}/{next(_next_database) % REDIS_DATABASES or 1}"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture(scope="session", autouse=True)
def hindsight_env(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point every in-process ``get_settings()`` at the private Redis and a temp data folder."""
    from shared.settings import get_settings

    env = {
        "HINDSIGHT_REDIS_URL": f"{redis_server}/0",
        "HINDSIGHT_DATA_DIR": str(tmp_path_factory.mktemp("hindsight-data")),
        "HINDSIGHT_MODELS_DIR": str(models_dir()),
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        get_settings.cache_clear()
        yield
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ProvisionReport]:
    """The offline stand-in cross-encoder, as ``hindsight models prepare --standin-reranker`` builds it."""
    from services.reranker.provision import build_standin

    model_dir = tmp_path_factory.mktemp("reranker") / "standin"
    return model_dir, build_standin(model_dir)


@pytest.fixture(scope="session")
def standin_dir(standin: tuple[Path, ProvisionReport]) -> Path:
    return standin[0]
