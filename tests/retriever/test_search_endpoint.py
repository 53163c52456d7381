"""``POST /v1/search`` and ``hindsight search`` end to end: real Redis, a real retriever Celery worker
process, the real gateway process over HTTP, and the CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from celery import Celery
from redis import Redis

from cli.local_stack import redis_server_binary
from shared.contracts import Question, SearchedQuestion
from shared.events import decode_entry
from shared.redis_keys import events_key
from shared.worker import Launch
from testing.processes import free_port, start_worker, wait_for

from .conftest import index_corpus, models_dir

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[dict[str, str]]:
    base = tmp_path_factory.mktemp("search-endpoint")
    index_corpus(base / "notes", base / "data" / "store", embedder)
    redis_port, http_port = free_port(), free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HINDSIGHT_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "HINDSIGHT_DATA_DIR": str(base / "data"),
        "HINDSIGHT_MODELS_DIR": str(models_dir().resolve()),
        "HINDSIGHT_GATEWAY_URL": f"http://127.0.0.1:{http_port}",
        "HINDSIGHT_GATEWAY_PORT": str(http_port),
        "HINDSIGHT_GATEWAY_AUTH": "open",  # the real gateway, open on loopback: auth is tested elsewhere
        "HINDSIGHT_ONNX_THREADS": "1",
    }
    logs = base / "logs"
    logs.mkdir()
    started: list[subprocess.Popen] = []
    try:
        started.append(
            subprocess.Popen(
                [redis_server_binary(), "--port", str(redis_port), "--save", "", "--appendonly", "no"],
                stdout=(logs / "redis.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        launch = Launch(pool="solo", loglevel="INFO", alone=True)
        started.append(start_worker("retriever", launch, env, logs / "worker.log"))
        server = [sys.executable, "-m", "services.gateway"]
        started.append(
            subprocess.Popen(
                server, cwd=REPO, env=env, stdout=(logs / "http.log").open("w"), stderr=subprocess.STDOUT
            )
        )
        url = env["HINDSIGHT_GATEWAY_URL"]
        wait_for(lambda: httpx.get(f"{url}/healthz", timeout=2).status_code == 200, 60, "the gateway")
        wait_for(lambda: "ready" in (logs / "worker.log").read_text(), 120, "the retriever worker")
        yield env
    finally:
        for process in reversed(started):
            stop(process)


@pytest.fixture(scope="module")
def gateway_url(stack: dict[str, str]) -> str:
    return stack["HINDSIGHT_GATEWAY_URL"]


def test_search_endpoint_runs_each_mode_through_the_retriever_worker(gateway_url: str) -> None:
    exact = httpx.post(f"{gateway_url}/v1/search", json={"query": "PYTHONMALLOC"}, timeout=60)
    assert exact.status_code == 200, exact.text
    body = exact.json()
    assert body["resolved_mode"] == "exact"
    assert body["candidates"][0]["chunk"]["source_uri"].endswith("gil.md")
    assert body["candidates"][0]["ranks"] == {"exact": 1}

    hybrid = httpx.post(
        f"{gateway_url}/v1/search",
        json={"query": "how long is the train to Kyoto", "filters": {"kinds": ["text"]}, "limit": 5},
        timeout=60,
    ).json()
    assert hybrid["resolved_mode"] == "hybrid"
    assert {c["chunk"]["kind"] for c in hybrid["candidates"]} == {"text"}


def test_search_endpoint_rejects_a_bad_request_clearly(gateway_url: str) -> None:
    response = httpx.post(f"{gateway_url}/v1/search", json={"query": "", "mode": "fuzzy"}, timeout=10)
    assert response.status_code == 422
    assert {error["loc"][-1] for error in response.json()["detail"]} == {"query", "mode"}


def test_cli_search_prints_ranked_passages_with_how_they_were_found(gateway_url: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HINDSIGHT_GATEWAY_URL": gateway_url, "COLUMNS": "200"}
    command = [
        sys.executable,
        "-c",
        "from cli.main import app; app()",
        "search",
        "sourdough starter",
        "--mode",
        "hybrid",
    ]
    completed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert "Sourdough bread" in completed.stdout
    assert "dense:0 #1" in completed.stdout


def test_question_plan_and_search_tasks_report_legs_and_hyde_in_the_events(stack: dict[str, str]) -> None:
    url = stack["HINDSIGHT_REDIS_URL"]
    client = Celery("test", broker=url, backend=url)
    question = Question(question_id="q-search-1", question="Why do CPU-bound threads not use several cores?")
    # A chain passes each stage's result to the next and stores none; this caller reads them.
    read = {"queue": "retrieve", "ignore_result": False}
    planned = client.send_task("retrieve.plan", args=[question.to_payload()], **read).get(timeout=60)
    searched = client.send_task("retrieve.search", args=[planned], **read).get(timeout=60)
    result = SearchedQuestion.model_validate(searched)
    assert result.plan.planner == "rules" and set(result.timings_ms) == {"plan", "search"}
    assert result.candidates[0].chunk.source_uri.endswith("gil.md")
    events = [
        decode_entry(fields)
        for _, fields in Redis.from_url(url, decode_responses=True).xrange(events_key(question.question_id))
    ]
    search_done = next(e for e in events if e.stage == "search" and e.status == "done")
    assert search_done.data["hyde"]["ran"] is False  # no LLM: HyDE is either not needed or impossible
    assert (
        "no HyDE passage" in search_done.data["hyde"]["reason"]
        or "strong" in search_done.data["hyde"]["reason"]
    )
    assert {"dense:0", "bm25"} <= set(search_done.data["legs"])
    assert "HyDE skipped" in search_done.detail
