"""A job's progress in Redis counts each file once, however often its batch is delivered."""

from __future__ import annotations

import redis

from shared.contracts import IndexFileResult
from shared.index_jobs import ProgressTracker


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
