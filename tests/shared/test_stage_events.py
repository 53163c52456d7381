"""The event vocabulary and the Redis key names: one definition each, and events checked against it."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pydantic
import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient

from services.gateway.routes import public
from shared.contracts import Plan
from shared.events import EventStream
from shared.settings import get_settings
from shared.stage_events import (
    QUESTION_STAGES,
    STAGE_DATA,
    DocumentData,
    MapData,
    PlanData,
    Stage,
    StageDataMismatchError,
    stage_data,
)
from shared.topology import MAP_CHORD, QUESTION_CHAIN

REPO = Path(__file__).parents[2]
SOURCE_FOLDERS = ("shared", "services", "cli", "pipeline", "provisioning", "testing", "bench")


@pytest.fixture
def stream() -> EventStream:
    client = redis.Redis.from_url(get_settings().redis_url, decode_responses=True)
    return EventStream(uuid.uuid4().hex, client, ttl_s=60)


def test_an_event_whose_data_is_another_stages_model_is_refused(stream: EventStream) -> None:
    batch = MapData(batch=0, facts=1, skipped=0, fell_back=False, worker_pid=1)
    with pytest.raises(StageDataMismatchError):
        stream.emit(Stage.PLAN, "done", data=batch)
    assert stream.read() == []


def test_an_event_whose_data_does_not_fit_its_stages_model_is_refused(stream: EventStream) -> None:
    with pytest.raises(pydantic.ValidationError):
        stream.emit(Stage.SEARCH, "done", data={"candidates": "many"})
    assert stream.read() == []


def test_an_events_data_reads_back_as_its_stages_model(stream: EventStream) -> None:
    planned = PlanData(plan=Plan(variations=["why?"]), searched_for="why?")
    stream.emit(Stage.PLAN, "done", data=planned)
    [(_, event)] = stream.read()
    assert stage_data(Stage.PLAN, event.data) == planned


def test_a_document_event_carries_only_the_fields_it_has(stream: EventStream) -> None:
    stream.emit(Stage.DOCUMENT, "progress", "a.md: retry 1", data=DocumentData(paths=["/d/a.md"]))
    [(_, event)] = stream.read()
    assert event.data == {"paths": ["/d/a.md"]}


def test_the_question_stages_run_in_the_topologys_order() -> None:
    tasks = (*QUESTION_CHAIN, MAP_CHORD.header, MAP_CHORD.body)
    assert tuple(QUESTION_STAGES) == tasks
    order = list(Stage)
    stages = [QUESTION_STAGES[task] for task in tasks]
    assert stages == sorted(stages, key=order.index)


def test_the_gateway_publishes_every_stage_with_its_label_and_data_schema() -> None:
    app = FastAPI()
    app.include_router(public.router)
    published = TestClient(app).get("/events/schema").json()
    assert set(published["stages"]) == {stage.name for stage in Stage}
    plan = published["stages"]["PLAN"]
    assert plan["name"] == "plan" and plan["label"] == "understanding the question"
    assert plan["data"]["title"] == "PlanData"
    assert all(
        (entry["data"] is None) == (Stage(entry["name"]) not in STAGE_DATA)
        for entry in published["stages"].values()
    )


def test_the_page_names_no_stage_itself() -> None:
    page = (REPO / "services" / "gateway" / "static" / "page.js").read_text()
    names = "|".join(stage.value for stage in Stage)
    assert not re.findall(rf"""\bstage\s*===?\s*["'`]({names})["'`]""", page)
    assert not re.findall(rf"""^\s*({names}):\s*["']""", page, re.MULTILINE)


def test_each_redis_key_is_spelled_only_in_shared_redis_keys() -> None:
    spelled = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in SOURCE_FOLDERS
        for path in (REPO / folder).rglob("*.py")
        if path != REPO / "shared" / "redis_keys.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(r"hindsight:[a-z]", line)
    ]
    assert spelled == []
