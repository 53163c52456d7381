"""Fixtures of the indexer tests: real ONNX embedder, real LanceDB store, a private Redis and Celery worker.

Redis runs as its own ``redis-server`` on a free loopback port (never 6379), and the ``index``
worker is a real ``celery worker`` subprocess whose HINDSIGHT_* environment points at a temp data dir.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from shared.worker import Launch
from testing.processes import free_port, start_worker
from tests.conftest import require_embedder

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2", threads=1)


@pytest.fixture
def settings(tmp_path: Path, docs: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        models_dir=require_embedder(),
        roots=[docs],
        chunk_tokens=64,
        chunk_overlap=12,
        max_file_bytes=2_000_000,
    )


@pytest.fixture
def store(settings: Settings, embedder: OnnxEmbedder) -> LanceDBStore:
    return LanceDBStore(settings.store_dir, embedder.dimension)


def start_index_worker(env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """The indexer alone (solo pool: ``stop`` kills its one process), under a name of its own."""
    name = f"indexer-test-{os.getpid()}-{free_port()}"
    launch = Launch(name=name, pool="solo", concurrency=1, loglevel="INFO", alone=True, heartbeat=False)
    return start_worker("indexer", launch, env, log_path)


def worker_env(redis_url: str, data_dir: Path, roots: list[Path], **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("HINDSIGHT_")}
    env.update(
        PYTHONPATH=str(REPO),
        HINDSIGHT_REDIS_URL=redis_url,
        HINDSIGHT_DATA_DIR=str(data_dir),
        HINDSIGHT_MODELS_DIR=str(require_embedder()),
        HINDSIGHT_ROOTS=os.pathsep.join(str(r) for r in roots),
        HINDSIGHT_CHUNK_TOKENS="64",
        HINDSIGHT_CHUNK_OVERLAP="12",
        HINDSIGHT_ONNX_THREADS="1",
        **extra,
    )
    return env


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, 15)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(5)
