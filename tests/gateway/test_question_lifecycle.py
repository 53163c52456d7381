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


def test_cancel_ends_a_pending_question_and_removes_it(gateway: Gateway) -> None:
    client = gateway.client(key_for(gateway))
    accepted = client.post("/v1/questions", json=QUESTION).json()
    assert accepted["id"] in [q["id"] for q in client.get("/v1/questions").json()]
    cancelled = client.delete(accepted["status_url"])
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "failed" and "cancelled" in cancelled.json()["error"]
    for gone in (accepted["status_url"], accepted["events_url"], f"{accepted['status_url']}/citations/1"):
        response = client.get(gone)
        assert response.status_code == 404 and "was cancelled" in response.json()["detail"], gone
    assert accepted["id"] not in [q["id"] for q in client.get("/v1/questions").json()]
    assert client.delete(accepted["status_url"]).status_code == 404
    assert client.delete("/v1/questions/nope").status_code == 404


def test_a_cancelled_follow_up_leaves_its_conversation_as_it_leaves_the_history(gateway: Gateway) -> None:
    client = gateway.client(key_for(gateway))
    first = client.post("/v1/questions", json={"question": "first question"}).json()
    assert first["conversation_id"] == first["id"]  # a question starts the conversation it names
    follow_up = {"question": "and the second?", "conversation_id": first["conversation_id"]}
    second = client.post("/v1/questions", json=follow_up).json()
    assert second["conversation_id"] == first["id"]
    path = f"/v1/conversations/{first['id']}"
    assert [t["id"] for t in client.get(path).json()["turns"]] == [first["id"], second["id"]]

    assert client.delete(f"/v1/questions/{second['id']}").status_code == 200
    assert [t["id"] for t in client.get(path).json()["turns"]] == [first["id"]]
    assert second["id"] not in {h["id"] for h in client.get("/v1/questions").json()}
