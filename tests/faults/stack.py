"""Real processes for the fault tests: workers and the gateway started as ``hindsight up`` starts them,
each one killable on its own, plus the files and checks the tests share.

Every process runs in its own session (``LocalStack.start``), so killing one worker's process group
kills that worker whole (main process and pool children), as a container dying would.
"""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import httpx

from cli.client import GatewayClient, GatewayError
from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, ProcessSpec, gateway_spec, process_alive
from shared.contracts import ScanReport
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from testing.processes import free_port, wait_for
from tests.conftest import REPO, require_embedder

EMBEDDER_DIMENSION = 384


class FaultStack:
    """A gateway and named workers on one Redis and one data folder; ``kill`` SIGKILLs one of them."""

    def __init__(self, redis_url: str, data_dir: Path, env: dict[str, str]) -> None:
        port = free_port()
        self.settings = Settings(
            data_dir=data_dir,
            models_dir=require_embedder(),
            redis_url=redis_url,
            gateway_port=port,
            gateway_url=f"http://127.0.0.1:{port}",
        )
        ensure_local_key(self.settings)
        self.local = LocalStack(self.settings)
        self.env = {**os.environ, "PYTHONPATH": str(REPO), **env, **self.local.settings_env()}
        self.specs: dict[str, ProcessSpec] = {}
        self.api_key = client_key(self.settings)
        self.client = GatewayClient(self.settings.gateway.gateway_url, self.api_key, timeout_s=60)

    def get(self, path: str) -> dict[str, object]:
        """A GET of the gateway's API with this stack's key; the JSON body, whatever the status."""
        response = httpx.get(
            self.settings.gateway.gateway_url + path, headers={"X-API-Key": self.api_key or ""}, timeout=30
        )
        return dict(response.json())

    def start(self, *specs: ProcessSpec) -> None:
        for spec in specs:
            self.specs[spec.name] = spec
            self.local.start(spec, self.env)

    def start_gateway(self) -> None:
        self.start(gateway_spec())

    def pid(self, name: str) -> int:
        return int(self.local.pidfile(name).read_text())

    def alive(self, name: str) -> bool:
        return process_alive(self.pid(name))

    def kill(self, name: str) -> None:
        """SIGKILL the worker's whole process group: no shutdown handler, no acknowledgement runs."""
        pid = self.pid(name)
        os.killpg(pid, signal.SIGKILL)
        wait_for(lambda: not process_alive(pid), 10, f"{name} to die")

    def restart(self, name: str) -> None:
        """Start a killed worker again, as compose's ``restart: unless-stopped`` would."""
        self.local.start(self.specs[name], self.env)

    def hostname(self, name: str) -> str:
        return f"{name}@{socket.gethostname()}"

    def processes(self) -> dict[str, set[int]]:
        """Each started process and its children (a prefork worker's pool), by name."""
        return {name: {self.pid(name), *children(self.pid(name))} for name in self.specs}

    def wait_until_served(self, queues: dict[str, int], timeout_s: float = 120) -> None:
        def served() -> bool:
            health = self.client.health()
            live = health["queues"]
            assert isinstance(live, dict)
            return all(live.get(queue, 0) >= count for queue, count in queues.items())

        wait_for(served, timeout_s, f"workers serving {queues}", interval_s=0.5)

    def down(self) -> None:
        self.local.down()

    def log(self, name: str) -> str:
        return (self.local.run_dir / f"{name}.log").read_text(errors="replace")

    def log_tails(self, names: tuple[str, ...], lines: int = 25) -> str:
        """The last lines of each worker's log, for a failure message."""
        return "\n".join(
            f"--- {name}.log\n" + "\n".join(self.log(name).splitlines()[-lines:]) for name in names
        )

    def store(self) -> LanceDBStore:
        return LanceDBStore(self.settings.store_dir, EMBEDDER_DIMENSION)


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(child) for child in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def index_report(stack: FaultStack, job_id: str, timeout_s: float) -> ScanReport:
    """The job's final report over HTTP; a gateway that cannot reach Redis for a moment counts as not yet."""

    def report() -> ScanReport | None:
        try:
            return stack.client.index_report(job_id)
        except (httpx.HTTPError, GatewayError):  # a 5xx while Redis restarts
            return None

    return wait_for(report, timeout_s, f"the report of index job {job_id}", interval_s=0.5)


def assert_store_holds_exactly(stack: FaultStack, root: Path, expected: dict[str, int]) -> None:
    """The store's manifest under ``root`` is ``expected`` (path -> chunks), and each document has exactly
    that many chunks, ordinals 0..n-1, none twice; the store holds no chunk that no manifest row claims."""
    assert_documents_whole(stack.store(), root, expected)


def assert_documents_whole(store: LanceDBStore, root: Path, expected: dict[str, int]) -> None:
    """:func:`assert_store_holds_exactly` of an open store."""
    manifest = store.manifest(str(root))
    assert {path: entry.chunk_count for path, entry in manifest.items()} == expected
    for entry in manifest.values():
        ordinals = list(range(entry.chunk_count + 1))
        chunks = store.document_chunks(entry.document_id, ordinals)
        assert sorted(c.ordinal for c in chunks) == list(range(entry.chunk_count)), entry.source_uri
    claimed = sum(entry.chunk_count for entry in store.manifest().values())
    assert store.count_chunks() == claimed, "chunks that no manifest row claims"
