"""Questions under faults: workers SIGKILLed mid-question, and a burst of 50 questions at once.

Real redis-server, real Celery workers as processes (the reranker scores with the offline stand-in
cross-encoder, fp32 on one thread), real HTTP to the gateway. The mappers' chat model is a scripted
stand-in for an Ollama server that takes 1.5 s per map batch (``slow_llm.py``), so a mapper can be
caught holding a batch; every other stage runs the product's own code and models.

A whole worker is killed (its process group, as a container dies): its unacknowledged message comes
back only through the question stages' short visibility timeout, set here to 20 s (it must outlast
the longest stage: 30 pairs scored on one thread). A killed prefork *child* alone is the easy case:
``task_reject_on_worker_lost`` requeues its task at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from celery import Celery

from shared.contracts import QuestionOptions, Strategy
from shared.redis_keys import QUESTION_UNACKED_KEY
from testing.processes import wait_for
from tests.faults.conftest import MAPPERS, RERANKERS, answered, long_note, question_events, worker_specs
from tests.faults.stack import FaultStack, index_report

pytestmark = pytest.mark.integration

VISIBILITY_TIMEOUT_S = 20
# Longer than a redelivery takes (the visibility timeout, then a map batch), so only a lost batch is resent.
STALL_S = 40
BURST = 50


@pytest.fixture(scope="module")
def stack(
    redis_url: str, standin_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FaultStack]:
    library = tmp_path_factory.mktemp("library").resolve()
    env = {
        "HINDSIGHT_ROOTS": str(library),
        "HINDSIGHT_ONNX_THREADS": "1",
        "HINDSIGHT_QUESTION_VISIBILITY_TIMEOUT_S": str(VISIBILITY_TIMEOUT_S),
        "HINDSIGHT_QUESTION_RESTORE_INTERVAL_S": "1",
        "HINDSIGHT_QUESTION_STALL_S": str(STALL_S),
        # Under the visibility timeout, and with it under the stall time (the settings' rules).
        "HINDSIGHT_QUESTION_SOFT_TIME_LIMIT_S": str(VISIBILITY_TIMEOUT_S - 4),
        "HINDSIGHT_QUESTION_TIME_LIMIT_S": str(VISIBILITY_TIMEOUT_S - 2),
        "HINDSIGHT_QUESTION_STALL_CHECK_S": "1",
        # Exhaustive questions send 30 passages to the reranker (seconds of scoring), precise ones 10.
        "HINDSIGHT_RERANK_INPUTS_EXHAUSTIVE": "30",
        "HINDSIGHT_RERANK_INPUTS_PRECISE": "10",
        "HINDSIGHT_MAP_BATCH_SIZE": "5",
        "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_BACKPRESSURE_MAX_QUEUED": "12",
    }
    stack = FaultStack(redis_url, tmp_path_factory.mktemp("data"), env)
    try:
        stack.start(*worker_specs(standin_dir))
        stack.start_gateway()
        stack.wait_until_served({"index": 1, "retrieve": 1, "rerank": 2, "map": 2, "reduce": 1})
        for index in range(25):
            (library / f"transport-{index}.md").write_text(long_note(index))
        report = index_report(stack, stack.client.index(str(library)), timeout_s=120)
        assert report.failed == 0 and report.chunks >= 50
        yield stack
    finally:
        stack.down()


def holder_of(
    inspector: Celery, stack: FaultStack, names: tuple[str, ...], task: str
) -> tuple[str, dict[str, Any]] | None:
    """The worker executing ``task`` right now and its request, by Celery's remote ``inspect``."""
    active = inspector.control.inspect([stack.hostname(n) for n in names], timeout=0.5).active() or {}
    for name in names:
        for request in active.get(stack.hostname(name), []):
            if request["name"] == task:
                return name, request
    return None


def broker_state(client: redis.Redis) -> str:
    """What Redis holds of the chord joins and the queues, for a failure message: where a job stalled."""
    lines = [f"queue {q}: {client.llen(q)} waiting" for q in ("rerank", "map", "reduce")]
    lines.append(f"unacked (question workers): {client.hlen(QUESTION_UNACKED_KEY)}")
    for key in sorted(client.scan_iter("celery-taskset-meta-*")):
        kind = client.type(key).decode()
        if kind == "string":
            value = client.get(key) or b""
            lines.append(f"{key.decode()} = {value[:80]!r}")
        else:
            size = {"zset": client.zcard, "set": client.scard, "list": client.llen}.get(kind)
            lines.append(f"{key.decode()}: {kind} of {size(key) if size else '?'}")
    return "\n".join(lines)


def is_mapped(event: dict[str, Any]) -> bool:
    return event["stage"] == "map" and event["status"] == "progress"


def test_question_completes_when_its_reranker_and_then_its_mapper_are_killed_mid_stage(
    stack: FaultStack, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    inspector = Celery("fault-inspector", broker=redis_url)
    question_id = stack.client.ask(
        "How does TCP guarantee delivery of every segment?", QuestionOptions(strategy=Strategy.EXHAUSTIVE)
    )

    reranker, _ = wait_for(lambda: holder_of(inspector, stack, RERANKERS, "rerank.score"), 60, "rerank")
    stack.kill(reranker)
    rerank_at_kill = [e["status"] for e in question_events(client, question_id) if e["stage"] == "rerank"]
    mapper, held = wait_for(
        lambda: holder_of(inspector, stack, MAPPERS, "synthesize.map"), 3 * VISIBILITY_TIMEOUT_S, "map"
    )
    killed_pids = stack.processes()[mapper]
    stack.kill(mapper)
    held_batch = held["args"][0]["batch_index"]
    map_at_kill = [e["data"]["batch"] for e in question_events(client, question_id) if is_mapped(e)]
    try:
        answer = wait_for(
            lambda: answered(stack, question_id), VISIBILITY_TIMEOUT_S + STALL_S + 40, "the answer", 0.5
        )
    except AssertionError as exc:
        so_far = [(e["stage"], e["status"]) for e in question_events(client, question_id)]
        workers = stack.log_tails(tuple(stack.specs))
        raise AssertionError(f"{exc}; events so far: {so_far}\n{broker_state(client)}\n{workers}") from exc

    events = question_events(client, question_id)
    assert "done" not in rerank_at_kill, "the reranker was killed holding the unfinished task"
    rerank = [e["status"] for e in events if e["stage"] == "rerank"]
    assert rerank[-2:] == ["started", "done"] and rerank.count("done") == 1, "another reranker redid it once"
    batches = fanned_out(client, question_id)
    mapped = [e["data"] for e in events if is_mapped(e)]
    assert held_batch not in map_at_kill, "the mapper was killed while mapping its batch"
    redone = [m for m in mapped if m["batch"] == held_batch]
    assert len(redone) == 1 and redone[0]["worker_pid"] not in killed_pids, "a surviving mapper redid it"
    assert sorted(m["batch"] for m in mapped) == list(range(batches)), "every batch was mapped once"
    reduce = [i for i, e in enumerate(events) if e["stage"] == "reduce" and e["status"] == "started"]
    last_map = max(i for i, e in enumerate(events) if is_mapped(e))
    assert len(reduce) == 1 and reduce[0] > last_map, "the chord fired once, after every batch"
    assert answer["answer"]["citations"], answer["answer"]["markdown"]
    print(f"killed {reranker} mid-rerank and {mapper} mid-map (batch {held_batch} of {batches})")


def test_a_map_batch_the_broker_lost_is_sent_again_and_the_question_completes(
    stack: FaultStack, redis_url: str
) -> None:
    """kombu loses a message a worker had popped but not yet recorded as unacknowledged when that
    worker is killed; nothing redelivers it. Here the test takes one map message off the queue."""
    client = redis.Redis.from_url(redis_url)
    for name in MAPPERS:
        if stack.alive(name):
            stack.kill(name)
    question_id = stack.client.ask(
        "Which timer makes TCP send a segment again?", QuestionOptions(strategy=Strategy.EXHAUSTIVE)
    )
    batches = wait_for(lambda: fanned_out(client, question_id), 60, "the map fan-out")
    wait_for(lambda: client.llen("map") == batches, 10, f"{batches} map messages")
    lost = json.loads(client.rpop("map"))["headers"]["id"]
    for name in MAPPERS:
        stack.restart(name)

    answer = wait_for(lambda: answered(stack, question_id), STALL_S + 60, "the answer", 0.5)

    events = question_events(client, question_id)
    mapped = sorted(e["data"]["batch"] for e in events if is_mapped(e))
    assert mapped == list(range(batches)), "every batch was mapped once, the lost one after it was resent"
    lost_index = int(lost.rsplit(":", 1)[1])
    resumes = [e["detail"] for e in events if e["stage"] == "resume"]
    assert resumes == [f"no map progress for {STALL_S}s: sent batches [{lost_index}] again"], resumes
    assert [e["status"] for e in events if e["stage"] == "reduce"] == ["started", "done"]
    assert answer["answer"]["citations"], answer["answer"]["markdown"]


def test_a_reduce_the_broker_lost_is_sent_again_with_the_mapped_results(
    stack: FaultStack, redis_url: str
) -> None:
    """The chord's reduce is the lost message: every batch was mapped and nothing would reduce them."""
    client = redis.Redis.from_url(redis_url)
    for name in MAPPERS:
        if not stack.alive(name):
            stack.restart(name)
    question_id = stack.client.ask("What does a TCP sender keep until it is acknowledged?")
    batches = wait_for(lambda: fanned_out(client, question_id), 60, "the map fan-out")
    wait_for(lambda: fan_out_acknowledged(stack, client, question_id), 10, "the fan-out to be acknowledged")
    stack.kill("reducer")
    wait_for(lambda: mapped_batches(client, question_id) == batches, 30, f"{batches} batches mapped")
    wait_for(lambda: client.llen("reduce") == 1, 10, "the chord's reduce message")
    client.rpop("reduce")
    stack.restart("reducer")

    answer = wait_for(lambda: answered(stack, question_id), STALL_S + 60, "the answer", 0.5)

    events = question_events(client, question_id)
    resumes = [e["detail"] for e in events if e["stage"] == "resume"]
    assert resumes == [f"no map progress for {STALL_S}s: sent the reduce again"], resumes
    assert mapped_batches(client, question_id) == batches, "no batch was mapped again"
    assert [e["status"] for e in events if e["stage"] == "reduce"] == ["started", "done"]
    assert answer["answer"]["citations"], answer["answer"]["markdown"]


def fan_out_acknowledged(stack: FaultStack, client: redis.Redis, question_id: str) -> bool:
    """The reducer replaced the fan-out by the chord and acknowledged its message: killing the reducer
    now cannot bring the fan-out back (it would publish the batches a second time)."""
    task_id = f"{question_id}:chain"
    replaced = f"synthesize.fan_out[{task_id}] ignored" in stack.log("reducer")
    unacked = [json.loads(entry)[0]["headers"]["id"] for entry in client.hvals(QUESTION_UNACKED_KEY)]
    return replaced and task_id not in unacked


def mapped_batches(client: redis.Redis, question_id: str) -> int:
    return sum(1 for e in question_events(client, question_id) if is_mapped(e))


def fanned_out(client: redis.Redis, question_id: str) -> int | None:
    """The number of map batches, once the question's fan-out has announced them."""
    for event in question_events(client, question_id):
        if event["stage"] == "map" and event["status"] == "started":
            return int(re.match(r"(\d+) batches", event["detail"]).group(1))
    return None


def test_fifty_questions_at_once_are_answered_or_refused_with_429_and_no_worker_dies(
    stack: FaultStack,
) -> None:
    for name in (*RERANKERS, *MAPPERS):
        if not stack.alive(name):
            stack.restart(name)
    stack.wait_until_served({"retrieve": 1, "rerank": 2, "map": 2, "reduce": 1})
    workers = stack.processes()
    headers = {"X-API-Key": stack.api_key or ""}

    def ask(n: int) -> httpx.Response:
        body = {"question": f"Which timer makes TCP resend segment number {n}?"}
        return httpx.post(
            f"{stack.settings.gateway.gateway_url}/v1/questions", json=body, headers=headers, timeout=60
        )

    with ThreadPoolExecutor(BURST) as pool:
        responses = list(pool.map(ask, range(BURST)))

    assert {r.status_code for r in responses} <= {202, 429}, [
        r.text for r in responses if r.status_code >= 300
    ]
    refused = [r for r in responses if r.status_code == 429]
    assert all(int(r.headers["Retry-After"]) >= 1 for r in refused)
    accepted = [r.json()["id"] for r in responses if r.status_code == 202]
    assert accepted, "some of the burst was accepted"
    answers = [wait_for(lambda q=q: answered(stack, q), 180, f"answer to {q}", 0.5) for q in accepted]
    assert all(a["answer"]["markdown"] for a in answers)
    assert stack.processes() == workers, "no worker process died or was replaced"
    print(f"{BURST} at once: {len(accepted)} answered, {len(refused)} refused with 429 + Retry-After")
