"""The gateway's behaviour agrees with its own OpenAPI schema: schemathesis, with a key and every
one of its checks, against a real gateway with a real retriever worker and a small indexed library.

Bounded: a fixed number of examples per operation and phase (``MAX_EXAMPLES``), a fixed seed, no
time-budgeted phases; streams left without workers end after one second (``STREAM_IDLE_S``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, celery_worker, gateway_spec
from services.indexer.pipeline import sync_root
from shared.contracts import IndexRequest
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from shared.topology import worker
from testing.processes import free_port, wait_for
from tests.conftest import REPO, require_embedder

pytestmark = pytest.mark.integration
MAX_EXAMPLES = 25
CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, str]]:
    """The samples indexed into a store, a retriever worker on it and the gateway, with one key."""
    library = tmp_path_factory.mktemp("library")
    shutil.copytree(REPO / "samples", library, dirs_exist_ok=True)
    port = free_port()
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("data"),
        models_dir=require_embedder(),
        redis_url=redis_url,
        roots=[library],
        gateway_port=port,
        gateway_url=f"http://127.0.0.1:{port}",
    )
    embedder = OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2", threads=1)
    store = LanceDBStore(settings.store_dir, embedder.dimension)
    sync_root(
        IndexRequest(job_id="fuzz", root=str(library)), store, embedder, settings.indexing, settings.data_dir
    )
    ensure_local_key(settings)
    local = LocalStack(settings)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        **local.settings_env(),
        "HINDSIGHT_ROOTS": str(library),
        "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_ONNX_THREADS": "1",
    }
    try:
        local.start(celery_worker(worker("retriever")), env)
        # No worker past the retriever: a question's stream stops after its plan and search, and the
        # gateway ends it one second later, so the fuzzer's stream requests are short. The gateway
        # accepts work for the absent workers instead of its 503 refusal (tests/gateway tests that).
        gateway_env = {**env, "HINDSIGHT_STREAM_IDLE_S": "1", "HINDSIGHT_REFUSE_WITHOUT_WORKERS": "false"}
        local.start(gateway_spec(), gateway_env)
        key = client_key(settings) or ""
        wait_for(lambda: "ready" in (local.run_dir / "retriever.log").read_text(), 120, "the retriever")
        wait_for(lambda: gateway_answers(settings.gateway.gateway_url), 60, "the gateway")
        yield settings, key
    finally:
        local.down()


def gateway_answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.timeout(900)
def test_the_gateway_passes_every_schemathesis_check_against_its_own_schema(
    stack: tuple[Settings, str], tmp_path: Path
) -> None:
    """Every phase (examples, coverage, fuzzing, and sequences of calls linked by their ids).

    The key goes in both headers the schema offers (``X-API-Key`` or ``Authorization: Bearer``):
    with only the first, schemathesis generated the bearer alternative and mutated it, and took the
    gateway's 200 for a schema-violating request accepted (ST201), though the request's
    ``X-API-Key`` satisfied the other alternative and the gateway rightly ignores an Authorization
    header it does not use (a proxy's Basic credentials pass through it)."""
    settings, key = stack
    command = [
        str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(CONFIG),
        "run", f"{settings.gateway.gateway_url}/openapi.json",
        "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", str(MAX_EXAMPLES), "--seed", "19", "--workers", "1",
        "--header", f"X-API-Key: {key}", "--header", f"Authorization: Bearer {key}",
        "--request-timeout", "30", "--generation-database", "none",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=800)
    assert done.returncode == 0, done.stdout[-12_000:] + done.stderr[-4_000:]
