"""Indexing under faults, through the public interfaces only: ``POST /v1/index``, the job's report and
progress over HTTP, and the store's contents.

Redis here runs with the persistence flags of ``docker-compose.yml`` (append-only file), and is
restarted the way ``docker compose restart redis`` does it: SIGTERM, then a new server on the same
port and data folder.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cli.local_stack import celery_worker
from shared.index_jobs import read_progress
from shared.topology import worker
from testing.processes import free_port, redis_url_for, start_redis_server, stop_redis_server, wait_for
from tests.faults.conftest import compose_redis_persistence, progress_of
from tests.faults.files import bad_writers, write_bad_files, write_notes
from tests.faults.stack import FaultStack, assert_store_holds_exactly, index_report

pytestmark = pytest.mark.integration

MAX_FILE_BYTES = 50_000
INDEXERS = ("indexer-a", "indexer-b")


class RestartableRedis:
    def __init__(self, workdir: Path) -> None:
        self.workdir, self.port = workdir, free_port()
        self.process: subprocess.Popen[bytes] = start_redis_server(
            workdir, self.port, compose_redis_persistence()
        )

    @property
    def url(self) -> str:
        return f"{redis_url_for(self.port)}/0"

    def restart(self) -> None:
        stop_redis_server(self.process)
        self.process = start_redis_server(self.workdir, self.port, compose_redis_persistence())

    def stop(self) -> None:
        stop_redis_server(self.process)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableRedis]:
    server = RestartableRedis(tmp_path_factory.mktemp("redis-aof"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("library").resolve()


@pytest.fixture(scope="module")
def stack(
    broker: RestartableRedis, library: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FaultStack]:
    env = {
        "HINDSIGHT_ROOTS": str(library),
        "HINDSIGHT_MAX_FILE_BYTES": str(MAX_FILE_BYTES),
        "HINDSIGHT_ONNX_THREADS": "1",
        "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE": "100000",
    }
    stack = FaultStack(broker.url, tmp_path_factory.mktemp("data"), env)
    try:
        stack.start(*(celery_worker(worker("indexer"), name=name) for name in INDEXERS))
        stack.start_gateway()
        stack.wait_until_served({"index": len(INDEXERS)})
        yield stack
    finally:
        stack.down()


def test_a_thousand_bad_files_are_each_reported_and_every_good_file_beside_them_is_indexed(
    stack: FaultStack, library: Path
) -> None:
    root = library / "mixed"
    good = write_notes(root, 60, subfolders=7)
    writers = bad_writers(library.parent / "templates", MAX_FILE_BYTES)
    bad = write_bad_files(root, 1000, writers)
    workers = stack.processes()

    job_id = stack.client.index(str(root))
    report = index_report(stack, job_id, timeout_s=240)

    reasons = {r.path: r.reason for r in [*report.failures, *report.skipped_files]}
    unreported = [path for path in bad if path not in reasons]
    assert not unreported, f"{len(unreported)} bad files missing from the report, e.g. {unreported[:3]}"
    assert all(reasons[path] for path in bad), "every bad file says why"
    assert not set(good) & set(reasons), "no good file is reported as bad"
    assert report.scanned == len(good) + len(bad)
    assert report.chunks == len(good)
    assert_store_holds_exactly(stack, root, good)
    assert stack.processes() == workers, "no worker process died or was replaced"
    print(f"{len(bad)} bad files of {len(writers)} kinds: {report.failed} failed, {report.skipped} skipped")


def test_redis_restarted_mid_index_loses_and_duplicates_no_chunk(
    stack: FaultStack, broker: RestartableRedis, library: Path
) -> None:
    root = library / "restart"
    good = write_notes(root, 200, subfolders=4)

    job_id = stack.client.index(str(root))
    at_restart = wait_for(
        lambda: (p := progress_of(stack, job_id)) and p.done >= p.total // 10 and p,
        120,
        "a tenth of the files",
    )
    broker.restart()
    report = index_report(stack, job_id, timeout_s=180)
    progress = read_progress(job_id, redis.Redis.from_url(broker.url, decode_responses=True))

    assert at_restart.done < at_restart.total, "Redis restarted while the job was still running"
    assert (report.new, report.failed, report.skipped, report.chunks) == (len(good), 0, 0, len(good))
    assert progress is not None
    assert (progress.total, progress.done, progress.failed, progress.chunks) == (len(good),) * 2 + (
        0,
        len(good),
    )
    assert_store_holds_exactly(stack, root, good)
    stack.wait_until_served({"index": len(INDEXERS)})
    print(f"restarted Redis at {at_restart.done}/{at_restart.total} files; progress after: {progress}")
