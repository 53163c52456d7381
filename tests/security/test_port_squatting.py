"""N1 and N2: another local user who starts a server first on the port the stack's Redis or gateway
uses must not be taken for the stack, nor be sent its password, its API key or a question.

The squatter is the unprivileged ``nobody`` account running real servers (``redis-server``, an HTTP
server that records every request it gets); the stack is started as ``hindsight up`` starts it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cli.listeners import UntrustedListenerError, foreign_listener
from cli.local_stack import LocalStack, gateway_spec, redis_answers, redis_socket, wait_until
from shared.settings import Settings
from testing.processes import free_port
from tests.conftest import REPO, require_embedder
from tests.security.outsider import NOBODY, system_python

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("switching to the nobody user needs root")


@pytest.fixture
def squatter_dir() -> Iterator[Path]:
    """A folder ``nobody`` may write (the tests' own tmp folders are root's, mode 0700)."""
    folder = Path(subprocess.check_output([*NOBODY, "mktemp", "-d"], text=True).strip())
    yield folder
    subprocess.run([*NOBODY, "rm", "-rf", str(folder)], check=False)


def started_as_nobody(argv: list[str], ready: object) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([*NOBODY, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(ready, 10, argv[0])  # type: ignore[arg-type]
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


@pytest.fixture
def squatted_redis(squatter_dir: Path) -> Iterator[tuple[int, redis.Redis]]:
    """``nobody``'s redis-server on the stack's configured port, with a user named like the stack's
    that takes any password (``user hindsight on nopass ~* &* +@all``), as the red team ran it."""
    port = free_port()
    acl = squatter_dir / "users.acl"
    acl.write_text("user default on nopass ~* &* +@all\nuser hindsight on nopass ~* &* +@all\n")
    os.chown(acl, *nobody_ids())
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(squatter_dir), "--aclfile", str(acl)]  # fmt: skip
    client = redis.Redis(port=port)
    process = started_as_nobody(argv, lambda: redis_answers(f"redis://127.0.0.1:{port}"))
    try:
        yield port, client
    finally:
        stop(process)


def nobody_ids() -> tuple[int, int]:
    out = (
        subprocess.check_output([*NOBODY, "id", "-u"], text=True),
        subprocess.check_output([*NOBODY, "id", "-g"], text=True),
    )
    return int(out[0]), int(out[1])


def connections_received(client: redis.Redis) -> int:
    return int(client.info("stats")["total_connections_received"])


def test_up_never_adopts_a_redis_another_user_started_on_its_port(
    squatted_redis: tuple[int, redis.Redis], tmp_path: Path
) -> None:
    port, squatter = squatted_redis
    settings = Settings(data_dir=tmp_path / "data", redis_url=f"redis://127.0.0.1:{port}/0")
    local = LocalStack(settings)
    env = {**os.environ, "PYTHONPATH": str(REPO), **local.settings_env()}
    before = connections_received(squatter)  # on this one connection, opened before the stack runs
    try:
        assert local.start_redis(env), "the stack must start its own Redis, not adopt nobody's"
        own = redis.Redis.from_url(env["HINDSIGHT_REDIS_URL"])
        own.set("hindsight:answer:probe", "the user's answer")
        assert own.get("hindsight:answer:probe") == b"the user's answer"
        assert connections_received(squatter) == before, "the stack connected to nobody's Redis"
        assert squatter.dbsize() == 0
        assert env["HINDSIGHT_REDIS_URL"].startswith("unix://")
        assert str(redis_socket(settings)) in env["HINDSIGHT_REDIS_URL"]
    finally:
        local.down()


def test_the_stacks_redis_listens_on_no_port_and_its_socket_is_out_of_other_users_reach(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", redis_url=f"redis://127.0.0.1:{free_port()}/0")
    local = LocalStack(settings)
    env = {**os.environ, "PYTHONPATH": str(REPO), **local.settings_env()}
    try:
        local.start_redis(env)
        pid = local.running()["redis"]
        tcp = subprocess.run(["ss", "-Htlnp"], capture_output=True, text=True).stdout
        assert f"pid={pid}," not in tcp, tcp
        socket_path = str(redis_socket(settings))
        probe = subprocess.run(
            [*NOBODY, "redis-cli", "-s", socket_path, "PING"], capture_output=True, text=True, timeout=30
        )
        assert "PONG" not in probe.stdout
        assert "Permission denied" in probe.stdout + probe.stderr
    finally:
        local.down()


RECORDER = textwrap.dedent(
    """
    import http.server, sys
    log = open(sys.argv[2], "a")
    class Fake(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            log.write(self.path + " " + self.headers.get("X-API-Key", "-") + "\\n"); log.flush()
            self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
            self.wfile.write(b'{"status": "ok", "queues": {}}')
        do_POST = do_GET
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Fake).serve_forever()
    """
)


@pytest.fixture
def fake_gateway(squatter_dir: Path) -> Iterator[tuple[int, Path]]:
    """``nobody``'s HTTP server on the gateway's port, recording each request and the key it carried."""
    port = free_port()
    script, log = squatter_dir / "fake.py", squatter_dir / "requests.log"
    script.write_text(RECORDER)
    process = started_as_nobody(
        [system_python(), str(script), str(port), str(log)], lambda: foreign_listener("127.0.0.1", port)
    )
    try:
        yield port, log
    finally:
        stop(process)


def test_up_does_not_call_a_gateway_port_another_user_holds_ready(
    fake_gateway: tuple[int, Path], tmp_path: Path
) -> None:
    port, log = fake_gateway
    settings = Settings(data_dir=tmp_path / "data", gateway_port=port, gateway_url=f"http://127.0.0.1:{port}")
    local = LocalStack(settings)
    env = {**os.environ, "PYTHONPATH": str(REPO), **local.settings_env()}
    try:
        local.start(gateway_spec(), env)
        with pytest.raises(UntrustedListenerError, match=r"held by another user's process \(uid \d+\)"):
            wait_until(local.gateway_listening, 30, "the gateway")
    finally:
        local.down()
    assert not log.exists() or log.read_text() == ""


def test_the_cli_sends_no_key_nor_question_to_a_server_another_user_holds(
    fake_gateway: tuple[int, Path], tmp_path: Path
) -> None:
    port, log = fake_gateway
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HINDSIGHT_DATA_DIR": str(tmp_path / "data"),
        "HINDSIGHT_GATEWAY_URL": f"http://127.0.0.1:{port}",
        "HINDSIGHT_API_KEY": "hs_0123abcd_the-users-secret",
    }
    for argv in (["ask", "what did I find about rye?"], ["search", "rye"], ["status"], ["open"]):
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "cli.main", *argv], cwd=REPO, env=env, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert result.returncode == 1, (argv, result.stdout, result.stderr)
        assert "held by another user's process" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        assert time.monotonic() - started < 30
    assert not log.exists() or log.read_text() == "", log.read_text()


def test_up_says_so_when_it_runs_as_root(squatter_dir: Path) -> None:
    """The smaller finding: ``hindsight up`` ran as root without a word. The real command, run as root
    on a data folder another user owns, says so before it refuses that folder: nothing starts, and
    no key is written into that folder (its owner could replace it)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HINDSIGHT_DATA_DIR": str(squatter_dir)}
    env["HINDSIGHT_MODELS_DIR"] = str(require_embedder())  # provisioned: up gets past that check
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "up"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 1 and "Traceback" not in said, said
    assert "running as root: every service runs as root too" in said
    assert "belongs to another user" in said
    assert list(squatter_dir.iterdir()) == [], "a key was written into another user's folder"
