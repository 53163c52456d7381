"""A question's life on a real gateway process with no worker behind it (its questions are queued):
the caller's history lists it, a quiet stream says it waits for a worker, and cancelling ends it."""

from __future__ import annotations

import httpx

from shared.api_keys import KeyFile
from shared.contracts import Event
from tests.gateway.conftest import Gateway

QUESTION = {"question": "what did I learn about reranking?"}
NO_WORKER = (
    "no live worker for the retrieve, rerank, map and reduce stages "
    "(the retriever, reranker, mapper and reducer workers)"
)


def key_for(gateway: Gateway) -> str:
    return KeyFile(gateway.data_dir / "api_keys.json").create("lifecycle")[1]


def first_events(client: httpx.Client, path: str, count: int) -> list[Event]:
    events: list[Event] = []
    with client.stream("GET", path, timeout=httpx.Timeout(10, read=60)) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(Event.model_validate_json(line[5:].strip()))
                if len(events) == count:
                    break
    return events


def test_history_lists_the_callers_questions_newest_first(gateway: Gateway) -> None:
    client = gateway.client(key_for(gateway))
    first = client.post("/v1/questions", json={"question": "first question"}).json()["id"]
    second = client.post("/v1/questions", json={"question": "second question"}).json()["id"]
    history = client.get("/v1/questions").json()
    assert [(h["id"], h["question"], h["status"]) for h in history] == [
        (second, "second question", "pending"),
        (first, "first question", "pending"),
    ]
    assert gateway.client(key_for(gateway)).get("/v1/questions").json() == [], "another key's history"


def test_a_quiet_stream_says_it_waits_for_a_worker_and_names_the_stage(gateway: Gateway) -> None:
    client = gateway.client(key_for(gateway))
    accepted = client.post("/v1/questions", json=QUESTION).json()
    [waiting] = first_events(client, accepted["events_url"], 1)
    assert waiting.stage == "waiting" and waiting.status == "progress"
    assert f"waiting for a worker: {NO_WORKER}" in waiting.detail
    assert "hindsight up" in waiting.detail


def test_cancel_ends_a_pending_question_and_a_second_cancel_is_a_conflict(gateway: Gateway) -> None:
    client = gateway.client(key_for(gateway))
    accepted = client.post("/v1/questions", json=QUESTION).json()
    cancelled = client.delete(accepted["status_url"])
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "failed" and "cancelled" in cancelled.json()["error"]
    [last] = first_events(client, accepted["events_url"], 1)
    assert (last.stage, last.status) == ("answer", "failed")
    again = client.delete(accepted["status_url"])
    assert again.status_code == 409 and "already ended" in again.json()["detail"]
    assert client.delete("/v1/questions/nope").status_code == 404
