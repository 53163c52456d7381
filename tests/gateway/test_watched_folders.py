"""``/v1/watch`` against a real Redis, through FastAPI's test client."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.gateway.routes.watched_folders import router
from shared.index_jobs import WatchRegistry
from shared.settings import get_settings


@pytest.fixture
def api(redis_env: redis.Redis, docs: Path) -> TestClient:
    app = FastAPI()
    app.state.settings = get_settings().replace(roots=[docs])
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


def test_folders_outside_the_roots_get_403_relative_ones_422_and_missing_ones_404(
    api: TestClient, tmp_path: Path
) -> None:
    outside = api.post("/v1/watch", json={"root": str(tmp_path)})
    assert outside.status_code == 403 and "outside the configured roots" in outside.json()["detail"]
    assert api.post("/v1/watch", json={"root": "docs"}).status_code == 422
    missing = api.post("/v1/watch", json={"root": str(tmp_path / "docs" / "nope")})
    assert missing.status_code == 404 and "no folder at" in missing.json()["detail"]
    assert api.get("/v1/watch").json() == []
