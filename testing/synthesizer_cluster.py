"""Real Celery synthesizer workers on a real Redis, started as subprocesses (used by tests and the bench)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis
from celery import Celery

from shared.contracts import Answer, Event, RerankedQuestion
from shared.events import EventStream, load_result
from shared.redis_keys import answer_key
from shared.topology import SYNTHESIZE_FAN_OUT, TASK_QUEUES
from shared.worker import Launch
from testing.processes import REPO, start_worker

ROOT = Path(__file__).resolve().parents[1]


class SynthesizerCluster:
    """Map and reduce workers sharing one Redis; questions go in by task name, answers come out of Redis."""

    def __init__(self, url: str, client_app: Celery) -> None:
        self.url = url
        self.app = client_app
        self.redis = redis.Redis.from_url(url, decode_responses=True)

    def ask(self, question: RerankedQuestion) -> None:
        queue = TASK_QUEUES[SYNTHESIZE_FAN_OUT]
        self.app.send_task(SYNTHESIZE_FAN_OUT, args=[question.to_payload()], queue=queue)

    def answer(self, question_id: str, timeout_s: float) -> Answer:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            answer = load_result(answer_key(question_id), Answer, self.redis)
            if answer is not None:
                return answer
            failed = [e for e in self.events(question_id) if e.stage == "answer" and e.status == "failed"]
            assert not failed, failed[0].detail
            time.sleep(0.2)
        raise AssertionError(f"no answer for {question_id} within {timeout_s} s")

    def events(self, question_id: str) -> list[Event]:
        return [event for _, event in EventStream(question_id, self.redis, ttl_s=600).read()]


def celery_app_for(url: str) -> Celery:
    app = Celery("hindsight-test", broker=url, backend=url)
    app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"])
    return app


def wait_for_workers(app: Celery, names: list[str], processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for process in processes:
            assert process.poll() is None, f"a worker exited with {process.returncode}"
        replies = app.control.ping(timeout=0.5) or []
        answered = {name.split("@")[0] for reply in replies for name in reply}
        if set(names) <= answered:
            return
    raise AssertionError(f"workers {names} did not come up")


@contextmanager
def synthesizer_workers(
    redis_url: str, data_dir: Path, settings: dict[str, str], mappers: int = 1
) -> Iterator[SynthesizerCluster]:
    """``mappers`` workers on the map queue and one on reduce, each its own process (``--pool solo``).

    Their output goes to ``data_dir/workers.log``.
    """
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HINDSIGHT_REDIS_URL": redis_url,
        "HINDSIGHT_DATA_DIR": str(data_dir),
        "HINDSIGHT_LLM_THREADS": "1",
        **settings,
    }
    roles = [(f"mapper{i}", "mapper") for i in range(mappers)] + [("reducer", "reducer")]
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "workers.log"
    processes = [
        start_worker(role, Launch(name=f"{name}-{os.getpid()}", pool="solo", loglevel="WARNING"), env, log)
        for name, role in roles
    ]
    app = celery_app_for(redis_url)
    try:
        wait_for_workers(app, [f"{name}-{os.getpid()}" for name, _ in roles], processes)
        yield SynthesizerCluster(redis_url, app)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
