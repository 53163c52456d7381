"""A pending question whose stages no worker serves says so as its stream opens: the ``waiting`` event
is the stream's first line, before any keep-alive (the gateway's own, or the SSE library's ping).
A real gateway process with no worker behind it, its own so that its queued question crowds no
other test's."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from shared.api_keys import KeyFile
from shared.contracts import Event
from testing.processes import free_port
from tests.gateway.conftest import Gateway, hindsight_env, running_gateway

pytestmark = pytest.mark.integration
NO_WORKER = "no live worker for the retrieve, rerank, map and reduce stages"


@pytest.fixture(scope="module")
def workerless_gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data_dir = tmp_path_factory.mktemp("waiting-at-once")
    env = hindsight_env(data_dir, redis_url, free_port(), HINDSIGHT_REFUSE_WITHOUT_WORKERS="false")
    with running_gateway(env, data_dir) as gateway:
        yield gateway


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
