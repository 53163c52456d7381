"""``hindsight ask`` with its output piped, as under ``| tee`` or in a script, says on stderr what a
question waits for while no worker takes it (a terminal shows it on the spinner instead); stdout
stays for the answer. The question's stream says it as it opens: the ``waiting`` event is its first
line, before any keep-alive. A real gateway process with no worker behind it, its own so that its
queued questions crowd no other test's."""

from __future__ import annotations

import select
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from shared.api_keys import KeyFile
from shared.contracts import Event
from testing.processes import free_port
from tests.conftest import REPO
from tests.gateway.conftest import Gateway, hindsight_env, running_gateway

pytestmark = pytest.mark.integration
NO_WORKER = "no live worker for the retrieve, rerank, map and reduce stages"


@pytest.fixture(scope="module")
def workerless_gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data_dir = tmp_path_factory.mktemp("ask-waiting")
    env = hindsight_env(data_dir, redis_url, free_port(), HINDSIGHT_REFUSE_WITHOUT_WORKERS="false")
    with running_gateway(env, data_dir) as gateway:
        yield gateway


def test_a_piped_ask_says_on_stderr_what_its_question_waits_for(workerless_gateway: Gateway) -> None:
    key = KeyFile(workerless_gateway.data_dir / "api_keys.json").create("ask-waiting")[1]
    asking = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "ask", "what did I learn about reranking?"],
        cwd=REPO,
        env={**workerless_gateway.env, "HINDSIGHT_API_KEY": key},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert asking.stderr is not None and asking.stdout is not None
    try:
        ready, _, _ = select.select([asking.stderr], [], [], 90)
        line = asking.stderr.readline() if ready else ""
    finally:
        asking.kill()
        stdout = asking.stdout.read()
        asking.wait()
    assert line.startswith(f"waiting for a worker: {NO_WORKER}"), line
    assert "(Ctrl-C cancels)" in line
    assert "waiting" not in stdout  # stdout is kept for the answer


def first_lines(client: httpx.Client, path: str, count: int) -> list[str]:
    """The stream's first ``count`` non-blank lines, comments (keep-alives, pings) included."""
    lines: list[str] = []
    with client.stream("GET", path, timeout=httpx.Timeout(10, read=60)) as response:
        for line in response.iter_lines():
            if line.strip():
                lines.append(line)
            if len(lines) == count:
                break
    return lines


def test_the_waiting_event_is_the_first_line_of_a_pending_questions_stream_when_no_worker_runs(
    workerless_gateway: Gateway,
) -> None:
    key = KeyFile(workerless_gateway.data_dir / "api_keys.json").create("waiting-at-once")[1]
    client = workerless_gateway.client(key)
    accepted = client.post("/v1/questions", json={"question": "what did I learn about reranking?"}).json()

    event_line, data_line = first_lines(client, accepted["events_url"], 2)

    assert event_line == "event: waiting", "the first line is the waiting event, before any keep-alive"
    waiting = Event.model_validate_json(data_line.removeprefix("data:").strip())
    assert waiting.status == "progress" and f"waiting for a worker: {NO_WORKER}" in waiting.detail
