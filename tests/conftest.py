"""Fixtures shared by every test folder: a private Redis, settings on temp dirs, the models.

Tests never use the Redis on 6379: each session starts its own ``redis-server`` on a free port,
so the suite runs the same on any machine.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import redis

from testing.processes import REDIS_DATABASES, running_redis

if TYPE_CHECKING:
    from provisioning.reranker import ProvisionReport

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODELS_DIR = REPO / ".hindsight" / "models"


def models_dir() -> Path:
    return Path(os.environ.get("HINDSIGHT_MODELS_DIR", DEFAULT_MODELS_DIR)).resolve()


def run_hindsight(env: dict[str, str], *args: str, timeout_s: float = 240) -> str:
    """``hindsight ARGS`` as a user runs it, in ``env``; its output, once it exits 0."""
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def require_embedder() -> Path:
    path = models_dir() / "all-MiniLM-L6-v2" / "model_int8.onnx"
    if not path.exists():
        pytest.fail(f"embedder missing at {path}: run `hindsight models prepare` first")
    return models_dir()


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


@pytest.fixture
def redis_env(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[redis.Redis]:
    """Point this process's settings (and cached Redis clients) at the private Redis."""
    from shared.events import redis_client
    from shared.settings import get_settings

    monkeypatch.setenv("HINDSIGHT_REDIS_URL", redis_url)
    get_settings.cache_clear()
    redis_client.cache_clear()
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    yield client
    get_settings.cache_clear()
    redis_client.cache_clear()


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """An empty folder to index (or watch), ``docs`` under the test's temp folder."""
    root = tmp_path / "docs"
    root.mkdir()
    return root


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
    from provisioning.standin import build_standin

    model_dir = tmp_path_factory.mktemp("reranker") / "standin"
    return model_dir, build_standin(model_dir)


@pytest.fixture(scope="session")
def standin_dir(standin: tuple[Path, ProvisionReport]) -> Path:
    return standin[0]
