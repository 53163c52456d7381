"""Real processes for the gateway's tests: a redis-server on a free port, the gateway, the stack."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from testing.processes import free_port, wait_for
from tests.conftest import models_dir

REPO = Path(__file__).resolve().parents[2]
MODELS_DIR = models_dir()


def hindsight_env(data_dir: Path, redis_url: str, gateway_port: int, **extra: str) -> dict[str, str]:
    """The environment of every process of one test stack: its own data folder, Redis and port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        PYTHONPATH=str(REPO),
        HINDSIGHT_DATA_DIR=str(data_dir),
        HINDSIGHT_REDIS_URL=redis_url,
        HINDSIGHT_GATEWAY_HOST="127.0.0.1",
        HINDSIGHT_GATEWAY_PORT=str(gateway_port),
        HINDSIGHT_GATEWAY_URL=f"http://127.0.0.1:{gateway_port}",
        HINDSIGHT_MODELS_DIR=str(MODELS_DIR),
        HINDSIGHT_METRICS_POLL_S="0.2",
        **extra,
    )
    return env


@dataclass
class Gateway:
    url: str
    env: dict[str, str]
    data_dir: Path

    def client(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-Key": key} if key else {}, timeout=10)


def start_gateway(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "services.gateway"], cwd=REPO, env=env, stdout=sink, stderr=sink
        )


@contextmanager
def running_gateway(env: dict[str, str], data_dir: Path) -> Iterator[Gateway]:
    """The gateway of ``env`` as its own process, from when it answers until the block ends."""
    process = start_gateway(env, data_dir / "gateway.log")
    url = env["HINDSIGHT_GATEWAY_URL"]
    try:
        wait_for(lambda: httpx.get(f"{url}/healthz").status_code == 200, 30, "the gateway")
        yield Gateway(url, env, data_dir)
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The gateway as its own process (``python -m services.gateway``), with small limits to hit."""
    data_dir = tmp_path_factory.mktemp("data")
    port = free_port()
    env = hindsight_env(
        data_dir,
        redis_url,
        port,
        HINDSIGHT_RATE_LIMIT_PER_MINUTE="20",
        HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE="20",
        HINDSIGHT_BACKPRESSURE_MAX_QUEUED="5",
        HINDSIGHT_BACKPRESSURE_RETRY_AFTER_S="7",
        HINDSIGHT_MAX_REQUEST_BYTES="4096",
        HINDSIGHT_MAX_QUESTION_CHARS="300",
        # No worker runs beside this gateway: its questions are queued, as with workers started on demand.
        HINDSIGHT_REFUSE_WITHOUT_WORKERS="false",
    )
    with running_gateway(env, data_dir) as running:
        yield running


PAGES = [
    "Chapter 1. Overview. libtasn1 parses and encodes ASN.1 structures with DER.",
    "Chapter 2. Usage. The function asn1_der_coding encodes a structure in DER, and asn1_der_decoding "
    "reads one back. Both return ASN1_SUCCESS when they succeed.",
    "Chapter 3. Errors. asn1_strerror returns a string that describes an error code.",
]
