"""The gateway restarted under a client following a question, then Redis gone for good.

Gateway: SIGKILLed and started again while a client reads a question's event stream; the client
reconnects with ``Last-Event-ID`` (as browsers' EventSource does). "Whole" means it receives every
event of the question's Redis stream exactly once, in order, ending with the answer.

Redis: restarted empty (no append-only file) while a question is in flight. "Whole" means: the
client following the question's event stream gets a last ``failed`` event that says Redis lost the
work, at once rather than after the stall limit (20 minutes by default, which this stack keeps);
asking for the lost question is a clear 404; the workers reconnect by themselves, so an index job
run again ends with the store holding exactly the files, and a new question is answered.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from shared.contracts import Event, QuestionOptions, Strategy
from shared.redis_keys import events_key
from testing.processes import free_port, redis_url_for, start_redis_server, stop_redis_server, wait_for
from tests.faults.conftest import answered, long_note, question_events, worker_specs
from tests.faults.files import write_notes
from tests.faults.stack import FaultStack, assert_store_holds_exactly, index_report

pytestmark = pytest.mark.integration


class ForgetfulRedis:
    """A redis-server without persistence, restarted empty on the same port."""

    def __init__(self, workdir: Path) -> None:
        self.workdir, self.port = workdir, free_port()
        self.process: subprocess.Popen[bytes] = start_redis_server(workdir, self.port)

    @property
    def url(self) -> str:
        return f"{redis_url_for(self.port)}/0"

    def restart_empty(self) -> None:
        stop_redis_server(self.process)
        assert not list(self.workdir.glob("*.rdb")) and not list(self.workdir.glob("*.aof"))
        self.process = start_redis_server(self.workdir, self.port)

    def stop(self) -> None:
        stop_redis_server(self.process)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForgetfulRedis]:
    server = ForgetfulRedis(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    library = tmp_path_factory.mktemp("library").resolve()
    for index in range(12):
        (library / f"transport-{index}.md").write_text(long_note(index))
    return library


@pytest.fixture(scope="module")
def stack(
    broker: ForgetfulRedis, library: Path, standin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FaultStack]:
    env = {
        "HINDSIGHT_ROOTS": str(library),
        "HINDSIGHT_ONNX_THREADS": "1",
        "HINDSIGHT_RERANK_INPUTS_EXHAUSTIVE": "30",
        "HINDSIGHT_MAP_BATCH_SIZE": "5",
        "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE": "100000",
    }
    stack = FaultStack(broker.url, tmp_path_factory.mktemp("data"), env)
    try:
        stack.start(*worker_specs(standin_dir))
        stack.start_gateway()
        stack.wait_until_served({"index": 1, "retrieve": 1, "rerank": 2, "map": 2, "reduce": 1})
        report = index_report(stack, stack.client.index(str(library)), timeout_s=180)
        assert report.failed == 0 and report.chunks > 0
        yield stack
    finally:
        stack.down()


def resuming_reader(stack: FaultStack, question_id: str, seen: list[tuple[str, Event]]) -> None:
    """Read the question's events like EventSource: on a broken or refused connection, connect again
    (every half second, for up to two minutes) sending the last event id received."""
    url = f"{stack.settings.gateway.gateway_url}/v1/questions/{question_id}/events"
    for _ in range(240):
        headers = {"X-API-Key": stack.api_key or ""}
        if seen:
            headers["Last-Event-ID"] = seen[-1][0]
        try:
            with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(10, read=None)) as response:
                response.raise_for_status()
                entry_id, data = "", ""
                for line in response.iter_lines():
                    if line.startswith("id:"):
                        entry_id = line[3:].strip()
                    elif line.startswith("data:"):
                        data = line[5:].strip()
                    elif not line and data:
                        seen.append((entry_id, Event.model_validate_json(data)))
                        if seen[-1][1].stage == "answer":
                            return
                        entry_id, data = "", ""
        except httpx.HTTPError:
            time.sleep(0.5)


def test_a_client_following_a_question_gets_every_event_once_across_a_gateway_restart(
    stack: FaultStack, broker: ForgetfulRedis
) -> None:
    question_id = stack.client.ask(
        "What does a TCP sender keep until it is acknowledged?", QuestionOptions(strategy=Strategy.EXHAUSTIVE)
    )
    seen: list[tuple[str, Event]] = []
    reader = threading.Thread(target=resuming_reader, args=(stack, question_id, seen), daemon=True)
    reader.start()
    wait_for(lambda: any(e.stage == "rerank" for _, e in seen), 120, "the client to see the rerank stage")
    before_restart = len(seen)
    stack.kill("gateway")
    stack.restart("gateway")
    reader.join(timeout=180)

    stored = redis.Redis.from_url(broker.url).xrange(events_key(question_id))
    assert not reader.is_alive(), f"the client still waits; it saw {[(e.stage, e.status) for _, e in seen]}"
    assert [entry_id for entry_id, _ in seen] == [entry_id.decode() for entry_id, _ in stored]
    assert (seen[-1][1].stage, seen[-1][1].status) == ("answer", "done")
    assert 0 < before_restart < len(seen), "the gateway restarted mid-question"
    print(f"{len(seen)} events, {before_restart} before the gateway restart, each once")


def follow(stack: FaultStack, question_id: str, seen: list[Event]) -> None:
    """Every event of the question's stream, as a client reads them, until the stream ends."""
    try:
        seen.extend(stack.client.question_events(question_id))
    except httpx.HTTPError as exc:  # a stream cut off ends without its last event: the test fails on it
        seen.append(Event(stream_id=question_id, stage="client", status="failed", detail=repr(exc)))


def test_a_question_in_flight_when_redis_comes_back_empty_fails_with_a_reason_and_the_stack_recovers(
    stack: FaultStack, broker: ForgetfulRedis, library: Path
) -> None:
    question_id = stack.client.ask(
        "How does TCP guarantee delivery of every segment?", QuestionOptions(strategy=Strategy.EXHAUSTIVE)
    )
    seen: list[Event] = []
    reader = threading.Thread(target=follow, args=(stack, question_id, seen), daemon=True)
    reader.start()
    client = redis.Redis.from_url(broker.url)
    wait_for(
        lambda: any(e["stage"] == "map" for e in question_events(client, question_id)), 120, "the map stage"
    )
    broker.restart_empty()
    reader.join(timeout=120)

    assert not reader.is_alive(), f"the client still waits; it saw {[(e.stage, e.status) for e in seen]}"
    last = seen[-1]
    assert (last.stage, last.status) == ("answer", "failed"), last
    assert last.detail is not None and "Redis lost this work" in last.detail
    assert [e for e in seen if e.stage == "answer"] == [last], "no answer besides the failure"
    lost = httpx.get(
        f"{stack.settings.gateway.gateway_url}/v1/questions/{question_id}",
        headers={"X-API-Key": stack.api_key or ""},
    )
    assert (lost.status_code, lost.json()["detail"]) == (404, f"no question with id {question_id}")

    stack.wait_until_served({"index": 1, "retrieve": 1, "rerank": 2, "map": 2, "reduce": 1})
    new_notes = write_notes(library / "after", 5)
    report = index_report(stack, stack.client.index(str(library / "after")), timeout_s=180)
    assert (report.new, report.failed) == (5, 0)
    assert_store_holds_exactly(stack, library / "after", new_notes)
    again = stack.client.ask("Which timer makes TCP send a segment again?")
    body = wait_for(lambda: answered(stack, again), 180, "an answer after the restart", interval_s=1)
    assert body["answer"]["markdown"]
    print(f"lost question ended: {last.detail}; events before: {[(e.stage, e.status) for e in seen[:-1]]}")
