"""An index job's progress in Redis: files done, rate and ETA, each file counted once however often its
batch is delivered."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import redis

from shared import index_jobs
from shared.contracts import IndexFileResult
from shared.index_jobs import ProgressTracker, read_progress


def test_a_file_recorded_again_by_a_redelivered_batch_is_counted_once(redis_env: redis.Redis) -> None:
    tracker = ProgressTracker("job-redelivered", redis_env)
    tracker.start(3, 300)
    batch = [
        IndexFileResult(path="/docs/a.md", status="indexed", chunks=4),
        IndexFileResult(path="/docs/b.pdf", status="failed", reason="corrupt PDF"),
    ]
    for result in batch:
        tracker.record(result, 100)
    for result in batch:  # the worker died before acknowledging; the batch runs again
        progress = tracker.record(result, 100)
    assert (progress.done, progress.failed, progress.chunks, progress.total) == (2, 1, 4, 3)
    assert progress.done_bytes == 200
    progress = tracker.record(IndexFileResult(path="/docs/c.md", status="indexed", chunks=2), 100)
    assert (progress.done, progress.chunks, progress.current) == (3, 6, "/docs/c.md")
    assert tracker.start(1, 100).done == 0, "a new start counts afresh"
    assert tracker.record(batch[0], 100).done == 1


def test_the_rates_count_from_the_first_batch_begun_not_from_a_slow_start(
    redis_env: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([100.0, 100.0, 110.0, 112.0, 112.0])  # start and its read, working, the record and its read
    monkeypatch.setattr(index_jobs, "time", SimpleNamespace(time=lambda: next(clock)))
    tracker = ProgressTracker("job-eta", redis_env)
    tracker.start(total=12, total_bytes=12_000)  # t=100: the worker then loads its model for 10 s
    tracker.working()  # t=110: its first batch begins
    first = tracker.record(IndexFileResult(path="/d/1.md", status="indexed", chunks=1), 2_000)  # t=112

    assert first.rate_bytes_per_s == 1_000 and first.eta_s == 10.0  # 10 kB left at 1 kB/s, not 60 s


def test_progress_reports_files_done_rate_and_eta(redis_env: redis.Redis) -> None:
    """What ``GET /v1/index/{job}`` returns while a job runs."""
    assert read_progress("job-1", redis_env) is None
    tracker = ProgressTracker("job-1", redis_env)
    tracker.start(total=4, total_bytes=4_000)
    tracker.working()
    tracker.record(IndexFileResult(path="/d/a.md", status="indexed", chunks=3), 1_000)
    tracker.record(IndexFileResult(path="/d/b.pdf", status="failed", reason="corrupt PDF"), 1_000)
    progress = read_progress("job-1", redis_env)
    assert progress is not None
    assert (progress.total, progress.done, progress.failed, progress.chunks) == (4, 2, 1, 3)
    assert (progress.total_bytes, progress.done_bytes) == (4_000, 2_000)
    assert progress.current == "/d/b.pdf"
    assert progress.rate_files_per_s > 0 and progress.eta_s is not None and progress.eta_s >= 0
