"""The gateway's watch and progress routes against a real Redis, through FastAPI's test client."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.gateway.watch_routes import router
from shared.contracts import IndexFileResult
from shared.index_jobs import ProgressTracker, WatchRegistry, read_progress
from shared.settings import get_settings


@pytest.fixture
def api(redis_env: redis.Redis, docs: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    monkeypatch.setenv("HINDSIGHT_ROOTS", str(docs))
    get_settings.cache_clear()
    app = FastAPI()
    app.include_router(router)
    return TestClient(app)


def test_register_list_and_remove_a_watched_root(api: TestClient, docs: Path, redis_env: redis.Redis) -> None:
    folder = docs / "notes"
    folder.mkdir()
    created = api.post("/v1/watch", json={"root": str(folder)})
    assert created.status_code == 201 and created.json()["root"] == str(folder.resolve())
    assert [w.root for w in WatchRegistry(redis_env).list()] == [str(folder.resolve())]
    assert [w["root"] for w in api.get("/v1/watch").json()] == [str(folder.resolve())]
    assert api.delete("/v1/watch", params={"root": str(folder)}).status_code == 204
    assert api.get("/v1/watch").json() == []
    assert api.delete("/v1/watch", params={"root": str(folder)}).status_code == 404


def test_folders_outside_the_roots_relative_or_missing_are_refused(api: TestClient, tmp_path: Path) -> None:
    outside = api.post("/v1/watch", json={"root": str(tmp_path)})
    assert outside.status_code == 422 and "outside the configured roots" in outside.json()["detail"]
    assert api.post("/v1/watch", json={"root": "docs"}).status_code == 422
    missing = api.post("/v1/watch", json={"root": str(tmp_path / "docs" / "nope")})
    assert missing.status_code == 422 and "not a folder" in missing.json()["detail"]
    assert api.get("/v1/watch").json() == []


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


def test_a_file_whose_task_runs_twice_counts_once_in_the_progress(redis_env: redis.Redis) -> None:
    """A redelivered message (killed worker, broker restart) indexes its file again: counted once."""
    tracker = ProgressTracker("job-2", redis_env)
    tracker.start(total=2)
    for _ in range(2):
        tracker.record(IndexFileResult(path="/d/a.md", status="indexed", chunks=3))
    tracker.record(IndexFileResult(path="/d/b.md", status="indexed", chunks=1))
    progress = read_progress("job-2", redis_env)
    assert progress is not None
    assert (progress.total, progress.done, progress.failed, progress.chunks) == (2, 2, 0, 4)
