"""Where users already work, against a running stack (``hindsight up`` on its own ports, the samples'
notes indexed): a follow-up in a conversation through the API and the CLI, the official ``openai``
client on the OpenAI-compatible endpoint, and the official ``mcp`` SDK's client over stdio
(``hindsight mcp``) and Streamable HTTP (``/mcp``). Every answer keeps its own span citations.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from shared.mcp_tools import Passage
from testing.processes import free_port
from tests.conftest import REPO, run_hindsight
from tests.gateway.conftest import hindsight_env

pytestmark = pytest.mark.integration

FIRST = "What is my sourdough starter called?"
FOLLOW_UP = "How often is it fed?"
FEEDING = "gets fed every Sunday"
TOOLS = {"search", "ask", "get_passage", "list_sources"}


@dataclass
class Stack:
    url: str
    key: str
    env: dict[str, str]
    notes: Path

    def http(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-Key": key or self.key}, timeout=120)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("stack")
    library = tmp_path_factory.mktemp("library")
    shutil.copytree(REPO / "samples", library / "samples")
    port = free_port()
    env = hindsight_env(data_dir, f"redis://127.0.0.1:{free_port()}/0", port, COLUMNS="200")
    try:
        run_hindsight(env, "up")
        run_hindsight(env, "index", str(library / "samples" / "notes"))
        key = (data_dir / "cli.key").read_text().strip()
        yield Stack(f"http://127.0.0.1:{port}", key, env, library / "samples" / "notes")
    finally:
        subprocess.run(
            [sys.executable, "-m", "cli.main", "down"], cwd=REPO, env=env, capture_output=True, timeout=60
        )


def answered(http: httpx.Client, question: str, conversation_id: str | None = None) -> dict[str, Any]:
    """Ask through the API, follow the events to the end; the accepted ids and the final status."""
    body: dict[str, Any] = {"question": question}
    if conversation_id:
        body["conversation_id"] = conversation_id
    accepted = http.post("/v1/questions", json=body)
    assert accepted.status_code == 202, accepted.text
    ids = accepted.json()
    with http.stream("GET", ids["events_url"], timeout=httpx.Timeout(30, read=None)) as events:
        for _ in events.iter_lines():
            pass
    state = http.get(ids["status_url"]).json()
    assert state["status"] == "done", state
    return {**ids, "answer": state["answer"]}


def cites_feeding(answer: dict[str, Any], notes: Path) -> None:
    """The answer says when the starter is fed, citing that line of sourdough.md, verified."""
    assert FEEDING in " ".join(answer["markdown"].split()), answer["markdown"]
    sourdough = [c for c in answer["citations"] if c["source_uri"] == str(notes / "sourdough.md")]
    assert any(
        c["line"] == 3 and c["verified"] and FEEDING in " ".join(c["quote"].split()) for c in sourdough
    )


def test_a_follow_up_is_answered_in_its_conversation_with_its_own_citations(stack: Stack) -> None:
    with stack.http() as http:
        first = answered(http, FIRST)
        assert "Clint" in first["answer"]["markdown"]
        follow_up = answered(http, FOLLOW_UP, first["conversation_id"])
        assert follow_up["conversation_id"] == first["conversation_id"]
        searched = follow_up["answer"]["question"]
        assert searched.startswith(FOLLOW_UP) and "sourdough" in searched and "starter" in searched
        cites_feeding(follow_up["answer"], stack.notes)

        conversation = http.get(f"/v1/conversations/{first['conversation_id']}").json()
        turns = conversation["turns"]
        assert [t["question"] for t in turns] == [FIRST, FOLLOW_UP]
        assert [t["answer"]["citations"] for t in turns] == [
            first["answer"]["citations"],
            follow_up["answer"]["citations"],
        ]
        history = http.get("/v1/questions", params={"limit": 2}).json()
        assert {h["conversation_id"] for h in history} == {first["conversation_id"]}

        unknown = http.post("/v1/questions", json={"question": FOLLOW_UP, "conversation_id": "nope"})
        assert unknown.status_code == 404 and "no conversation nope" in unknown.json()["detail"]


def test_a_conversation_belongs_to_the_key_that_started_it(stack: Stack) -> None:
    printed = run_hindsight(stack.env, "keys", "create", "--name", "other")
    other = next(word for word in printed.split() if word.startswith("hs_"))
    with stack.http() as mine, stack.http(other) as theirs:
        started = mine.post("/v1/questions", json={"question": FIRST}).json()
        refused = theirs.post(
            "/v1/questions", json={"question": FOLLOW_UP, "conversation_id": started["conversation_id"]}
        )
        assert refused.status_code == 404
        assert theirs.get(f"/v1/conversations/{started['conversation_id']}").status_code == 404


def test_cli_continue_asks_the_follow_up_in_the_latest_conversation(stack: Stack) -> None:
    first = run_hindsight(stack.env, "ask", FIRST)
    assert "Clint" in first and "follow up: --continue" in first
    shown = run_hindsight(stack.env, "ask", "--continue", FOLLOW_UP)
    said = " ".join(shown.split())
    assert "searched for: How often is it fed? (sourdough starter called)" in said
    assert FEEDING in said and f"{stack.notes / 'sourdough.md'}:3 (quote found in file" in said
    unknown = subprocess.run(
        [sys.executable, "-m", "cli.main", "ask", "-c", "missing", FOLLOW_UP],
        cwd=REPO, env=stack.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert unknown.returncode == 1 and "no conversation missing" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_openai_client_gets_a_cited_answer_streamed_and_not(stack: Stack) -> None:
    client = openai.OpenAI(base_url=f"{stack.url}/v1", api_key=stack.key, max_retries=0, timeout=120)
    assert [m.id for m in client.models.list()] == ["hindsight"]
    earlier = client.chat.completions.create(model="hindsight", messages=[{"role": "user", "content": FIRST}])
    said = earlier.choices[0].message.content or ""
    assert "Clint" in said and "[1]" in said and "\n\nSources:\n- [1] " in said
    messages: list[Any] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": FIRST},
        {"role": "assistant", "content": said},
        {"role": "user", "content": FOLLOW_UP},
    ]
    whole = client.chat.completions.create(model="hindsight", messages=messages)
    content = whole.choices[0].message.content or ""
    extra = whole.model_extra or {}
    cites_feeding({"markdown": content, "citations": extra["citations"]}, stack.notes)
    assert f"{stack.notes / 'sourdough.md'}:3 (quote found in file" in content
    assert extra["hindsight"]["searched_for"].startswith(FOLLOW_UP)

    chunks = list(client.chat.completions.create(model="hindsight", messages=messages, stream=True))
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == content
    assert chunks[-1].choices[0].finish_reason == "stop"
    spans = [(c["number"], c["source_uri"], c["line"], c["quote"]) for c in extra["citations"]]
    last = (chunks[-1].model_extra or {})["citations"]
    assert [(c["number"], c["source_uri"], c["line"], c["quote"]) for c in last] == spans

    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{stack.url}/v1", api_key="wrong", max_retries=0).models.list()
    with pytest.raises(openai.UnprocessableEntityError, match="model: Input should be 'hindsight'"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": FIRST}])


async def every_tool(client: Client, notes: Path) -> None:
    """List the tools and call each one, as an assistant would; then a refused call."""
    assert {t.name for t in (await client.list_tools()).tools} >= TOOLS

    found = await client.call_tool("search", {"query": "rye flour starter", "limit": 3})
    passages = found.structured_content["passages"]
    assert not found.is_error and passages[0]["path"] == str(notes / "sourdough.md")
    assert passages[0]["line"] == 1 and "rye" in passages[0]["text"]  # the chunk opens at the heading
    assert passages[0]["score"] > 0 and passages[0]["found_by"]
    described = Passage.model_fields["found_by"].description or ""  # what a model reads of the legs
    named = set(re.findall(r"(\w+)(?::N)? \(", described))
    assert {leg.split(":")[0] for p in passages for leg in p["found_by"]} <= named

    first = (await client.call_tool("ask", {"question": FIRST})).structured_content
    follow = await client.call_tool(
        "ask", {"question": FOLLOW_UP, "conversation_id": first["conversation_id"]}
    )
    answer = follow.structured_content
    assert not follow.is_error and FEEDING in " ".join(answer["answer"].split())
    feeding = next(c for c in answer["citations"] if FEEDING in " ".join(c["quote"].split()))
    assert feeding["place"] == f"{notes / 'sourdough.md'}:3" and feeding["verified"]

    passage = await client.call_tool(
        "get_passage", {"question_id": answer["question_id"], "number": feeding["number"]}
    )
    assert passage.structured_content["located"] and passage.structured_content["line"] == 3
    assert passage.structured_content["before"].startswith("# Sourdough notes")

    sources = (await client.call_tool("list_sources", {})).structured_content
    folders = sources["result"] if isinstance(sources, dict) else sources
    assert [(f["folder"], f["documents"]) for f in folders] == [(str(notes), 2)]

    refused = await client.call_tool("get_passage", {"question_id": "missing", "number": 1})
    assert refused.is_error and refused.content[0].text.endswith(": no answer for question missing")


def test_mcp_sdk_client_over_stdio_calls_every_tool(stack: Stack) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "mcp"], env=stack.env, cwd=str(REPO)
    )

    async def session() -> None:
        async with Client(server, read_timeout_seconds=120) as client:
            await every_tool(client, stack.notes)

    asyncio.run(session())


def test_mcp_sdk_client_over_streamable_http_calls_every_tool_with_the_api_key(stack: Stack) -> None:
    async def session(key: str) -> None:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http,
            Client(streamable_http_client(f"{stack.url}/mcp", http_client=http)) as client,
        ):
            await every_tool(client, stack.notes)

    asyncio.run(session(stack.key))
    refused = httpx.post(f"{stack.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401


def test_cli_save_writes_the_answer_as_a_note_linking_its_citations_and_indexes_it(
    stack: Stack, tmp_path: Path
) -> None:
    """Last: the note, once indexed, holds the answer's words and is cited like any note."""
    folder = tmp_path / "answers"
    shown = " ".join(run_hindsight(stack.env, "ask", "--save", str(folder), FIRST).split())
    [note] = folder.glob("*.md")
    assert f"saved as {note}" in shown and "scanned 1: 1 new" in shown
    link = os.path.relpath(stack.notes / "sourdough.md", folder) + "#L3"
    text = note.read_text()
    assert text.startswith(f'---\ntitle: "{FIRST}"\n') and f"# {FIRST}\n" in text
    assert f"sourdough.md:3]({link}) (quote found in file)" in text and text.endswith(f"\n[1]: <{link}>\n")
