"""The disks of the services fill up: Redis's append-only file, then the workers' logs, each on a real
tmpfs of a few MiB that the test mounts (root only) and fills while an index job runs.

Redis: with its disk full it refuses every write (``MISCONF``), so nothing can be queued or recorded.
"Whole" means: a question asked then gets a 503 that names the cause (not a 500, not a hang); the
index job running when the disk filled ends once space is freed, with the store holding exactly its
files (chunk counts per document, no orphan chunk); every worker process is the one started before;
a question asked afterwards is answered.

Logs: every worker and the gateway write their log to a full disk. "Whole" means: an index job and a
question both complete as on an empty disk, and no process dies.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from cli.local_stack import local_worker
from shared.contracts import QuestionOptions
from shared.index_jobs import read_progress
from shared.topology import WORKERS
from testing.processes import free_port, redis_url_for, start_redis_server, stop_redis_server, wait_for
from tests.faults.conftest import answered, compose_redis_persistence, fill, mounted_tmpfs, progress_of
from tests.faults.files import write_notes
from tests.faults.stack import FaultStack, assert_store_holds_exactly, index_report

pytestmark = pytest.mark.integration

VOLUME = "16m"
QUESTION = "How often is the sourdough starter fed?"
OUTAGE_S = 30  # longer than the clients' own retries (``shared.events.OUTAGE_RETRY``, about 15 s)


@pytest.fixture
def redis_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "redis-disk", VOLUME) as disk:
        yield disk


def start_stack(redis_url: str, data_dir: Path, library: Path) -> FaultStack:
    env = {
        "HINDSIGHT_ROOTS": str(library),
        "HINDSIGHT_ONNX_THREADS": "1",
        "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE": "100000",
    }
    stack = FaultStack(redis_url, data_dir, env)
    stack.start(*(local_worker(w) for w in WORKERS if w.always_on))
    stack.start_gateway()
    stack.wait_until_served({"index": 1, "retrieve": 1, "rerank": 1, "map": 1, "reduce": 1})
    return stack


def refuses_writes(url: str) -> bool:
    """Whether Redis has failed to write its append-only file (a write is tried first, to find out)."""
    client = redis.Redis.from_url(url)
    with contextlib.suppress(redis.RedisError):  # MISCONF, as whatever class this process maps it to
        client.set("probe", "x" * 100_000)
    return client.info("persistence")["aof_last_write_status"] == "err"


def ask_status(stack: FaultStack, question: str) -> tuple[int, str]:
    response = httpx.post(
        f"{stack.settings.gateway.gateway_url}/v1/questions",
        json={"question": question},
        headers={"X-API-Key": stack.api_key or ""},
        timeout=30,
    )
    return response.status_code, response.text


def test_redis_with_a_full_disk_refuses_new_questions_with_the_cause_and_the_running_index_job_ends_whole(
    redis_disk: Path, tmp_path: Path
) -> None:
    library = (tmp_path / "library").resolve()
    write_notes(library / "first", 20)
    port = free_port()
    server = start_redis_server(redis_disk, port, compose_redis_persistence())
    redis_url = f"{redis_url_for(port)}/0"
    stack = start_stack(redis_url, tmp_path / "data", library)
    try:
        assert index_report(stack, stack.client.index(str(library / "first")), 120).failed == 0
        workers = stack.processes()
        second = write_notes(library / "second", 300, subfolders=3)
        job_id = stack.client.index(str(library / "second"))
        wait_for(lambda: (p := progress_of(stack, job_id)) and p.done >= 10, 120, "ten files indexed")
        filler = fill(redis_disk, leave_bytes=0)
        wait_for(lambda: refuses_writes(redis_url), 10, "Redis to refuse writes")
        refused = ask_status(stack, QUESTION)
        time.sleep(OUTAGE_S)
        at_free = read_progress(job_id, redis.Redis.from_url(redis_url, decode_responses=True))
        filler.unlink()
        report = index_report(stack, job_id, timeout_s=240)
        question_id = stack.client.ask(QUESTION, QuestionOptions())
        after = wait_for(lambda: answered(stack, question_id), 120, "an answer")

        assert refused[0] == 503 and "full or not writable" in refused[1], refused
        assert at_free is not None and at_free.done < at_free.total, f"the job was still running: {at_free}"
        assert (report.new, report.failed, report.chunks) == (len(second), 0, len(second))
        assert_store_holds_exactly(stack, library / "second", second)
        assert stack.processes() == workers, "no worker died of the refused writes"
        assert after["answer"]["citations"], after
        print(f"refused: {refused[1]}; {at_free.done} files done at the free, {report.chunks} at the end")
    finally:
        stack.down()
        stop_redis_server(server)


@pytest.fixture
def log_disk(tmp_path: Path) -> Iterator[Path]:
    """The stack's run folder (its logs) on a tmpfs of its own, so the store is not on the full disk."""
    with mounted_tmpfs(tmp_path / "data" / "run", VOLUME) as run_dir:
        yield run_dir


def test_workers_whose_logs_cannot_be_written_still_index_and_answer(
    log_disk: Path, tmp_path: Path, redis_url: str
) -> None:
    library = (tmp_path / "library").resolve()
    notes = write_notes(library, 60, subfolders=2)
    stack = start_stack(redis_url, tmp_path / "data", library)
    try:
        workers = stack.processes()
        filler = fill(log_disk, leave_bytes=0)
        report = index_report(stack, stack.client.index(str(library)), timeout_s=180)
        question_id = stack.client.ask(QUESTION, QuestionOptions())
        after = wait_for(lambda: answered(stack, question_id), 120, "an answer")
        log_sizes = {path.name: path.stat().st_size for path in log_disk.glob("*.log")}
        filler.unlink()

        assert (report.new, report.failed, report.chunks) == (len(notes), 0, len(notes))
        assert_store_holds_exactly(stack, library, notes)
        assert after["answer"]["citations"], after
        assert stack.processes() == workers, "no process died of its unwritable log"
        print(f"logs frozen at {sum(log_sizes.values())} bytes while {report.chunks} files were indexed")
    finally:
        stack.down()
