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
    tracker.start(3)
    batch = [
        IndexFileResult(path="/docs/a.md", status="indexed", chunks=4),
        IndexFileResult(path="/docs/b.pdf", status="failed", reason="corrupt PDF"),
    ]
    for result in batch:
        tracker.record(result)
    for result in batch:  # the worker died before acknowledging; the batch runs again
        progress = tracker.record(result)
    assert (progress.done, progress.failed, progress.chunks, progress.total) == (2, 1, 4, 3)
    progress = tracker.record(IndexFileResult(path="/docs/c.md", status="indexed", chunks=2))
    assert (progress.done, progress.chunks, progress.current) == (3, 6, "/docs/c.md")
    assert tracker.start(1).done == 0 and tracker.record(batch[0]).done == 1, "a new start counts afresh"


def test_the_eta_counts_from_the_first_file_done_not_from_a_slow_start(
    redis_env: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([100.0, 100.0, 110.0, 110.0, 111.0, 111.0, 112.0, 112.0])  # each write, then its read
    monkeypatch.setattr(index_jobs, "time", SimpleNamespace(time=lambda: next(clock)))
    tracker = ProgressTracker("job-eta", redis_env)
    tracker.start(total=12)  # t=100: the worker then loads its model for 10 s

    first = tracker.record(IndexFileResult(path="/d/1.md", status="indexed", chunks=1))  # t=110
    assert first.eta_s is None and first.rate_files_per_s == 0
    tracker.record(IndexFileResult(path="/d/2.md", status="indexed", chunks=1))  # t=111
    third = tracker.record(IndexFileResult(path="/d/3.md", status="indexed", chunks=1))  # t=112

    assert third.rate_files_per_s == 1.0 and third.eta_s == 9.0  # not 9 files at 3 per 12 s: 36 s


def test_progress_reports_files_done_rate_and_eta(redis_env: redis.Redis) -> None:
    """What ``GET /v1/index/{job}`` returns while a job runs."""
    assert read_progress("job-1", redis_env) is None
    tracker = ProgressTracker("job-1", redis_env)
    tracker.start(total=4)
    tracker.record(IndexFileResult(path="/d/a.md", status="indexed", chunks=3))
    tracker.record(IndexFileResult(path="/d/b.pdf", status="failed", reason="corrupt PDF"))
    progress = read_progress("job-1", redis_env)
    assert progress is not None
    assert (progress.total, progress.done, progress.failed, progress.chunks) == (4, 2, 1, 3)
    assert progress.current == "/d/b.pdf"
    assert progress.rate_files_per_s > 0 and progress.eta_s is not None and progress.eta_s >= 0
