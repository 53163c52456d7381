"""A real ``rerank`` Celery worker (thread pool) on a real redis-server, killed mid-batch.

No scoring slow-down hook: 200 long pairs on the fp32 stand-in with one thread take seconds, so
the SIGKILL lands while the batch is being scored (the stream shows ``started`` and no ``done``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

from shared.contracts import Plan, RerankedQuestion, SearchedQuestion
from shared.redis_keys import RERANKER_STATUS_PREFIX as STATUS_KEY_PREFIX
from shared.redis_keys import events_key
from shared.worker import Launch
from testing.processes import start_worker, wait_for
from tests.reranker.conftest import candidates, passages

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def start_reranker(env: dict[str, str], name: str, log: Path) -> subprocess.Popen[bytes]:
    """The reranker as the topology runs it (thread pool), two threads, under ``name``."""
    return start_worker("reranker", Launch(name=name, concurrency=2, loglevel="INFO", alone=True), env, log)


def rerank_events(client: redis.Redis, question_id: str) -> list[dict[str, object]]:
    entries = client.xrange(events_key(question_id))
    events = [json.loads(fields[b"event"]) for _, fields in entries]
    return [e for e in events if e["stage"] == "rerank"]


def test_worker_killed_mid_batch_task_is_redelivered_and_completes(
    standin_dir: Path, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HINDSIGHT_REDIS_URL": redis_url,
        "HINDSIGHT_RERANKER_MODEL_DIR": str(standin_dir),
        "HINDSIGHT_RERANKER_PRECISION": "fp32",
        "HINDSIGHT_ONNX_THREADS": "1",
        # Redelivery waits this long; it must outlast the second worker's scoring, or Redis hands the
        # task out a third time while it is still running. Sweeps run every second.
        "HINDSIGHT_QUESTION_VISIBILITY_TIMEOUT_S": "30",
        "HINDSIGHT_QUESTION_RESTORE_INTERVAL_S": "1",
        # Time limits stay under the visibility timeout (settings refuse otherwise); a thread pool
        # does not enforce them.
        "HINDSIGHT_QUESTION_SOFT_TIME_LIMIT_S": "25",
        "HINDSIGHT_QUESTION_TIME_LIMIT_S": "28",
    }
    for key in ("HINDSIGHT_REDIS_URL", *(k for k in env if k.startswith("HINDSIGHT_QUESTION_"))):
        monkeypatch.setenv(key, env[key])
    from shared.celery_app import create_app
    from shared.settings import get_settings

    get_settings.cache_clear()
    client_app = create_app()
    client = redis.Redis.from_url(redis_url)
    question = "How does TCP guarantee delivery?"
    searched = SearchedQuestion(
        question_id="q-kill", question=question, plan=Plan(variations=[question]),
        candidates=candidates(passages(200, seed=7)),
    )  # fmt: skip

    first = start_reranker(env, "rerank-a", tmp_path / "a.log")
    try:
        wait_for(lambda: client.keys(f"{STATUS_KEY_PREFIX}*"), 120, "the worker's status heartbeat")
        status = json.loads(client.get(client.keys(f"{STATUS_KEY_PREFIX}*")[0]))
        assert status["mode"] == "scoring" and "stand-in" in status["model"]
        result = client_app.send_task("rerank.score", args=[searched.to_payload()], ignore_result=False)
        wait_for(lambda: rerank_events(client, "q-kill"), 60, "the rerank stage to start")
        time.sleep(0.5)
        assert [e["status"] for e in rerank_events(client, "q-kill")] == ["started"], "killed mid-batch"
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    second = start_reranker(env, "rerank-b", tmp_path / "b.log")
    try:
        payload = result.get(timeout=240)
    finally:
        second.terminate()
        second.wait(timeout=30)
    done = RerankedQuestion.model_validate(payload)
    assert done.rerank.received == 200
    assert done.rerank.model is not None and "stand-in" in done.rerank.model
    statuses = [e["status"] for e in rerank_events(client, "q-kill")]
    assert statuses == ["started", "started", "done"], "a second worker ran the redelivered task"
    assert "Reranked 200 ->" in (tmp_path / "b.log").read_text()
    get_settings.cache_clear()
