"""LLM backends: lenient JSON parsing, and the Ollama client against a local HTTP stand-in.

No Ollama server can run here, so ``OllamaStandIn`` is a small real HTTP server that speaks Ollama's
``POST /api/chat`` (non-streaming): it records each request and answers with a scripted message.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel

from shared.interfaces import ChatMessage, LLMError
from shared.llms import OllamaLLM, create_llm, parse_json_reply
from shared.settings import GenerationSettings, Settings
from tests.synthesizer.scripted_llm import FlakyLLM


class Score(BaseModel):
    label: str
    count: int


class OllamaStandIn:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = '{"label": "ok", "count": "3"}'
        self.status = 200
        self.delay_s = 0.0
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stand_in.requests.append({"path": self.path, **body})
                time.sleep(stand_in.delay_s)
                if stand_in.status != 200:
                    payload: dict[str, Any] = {"error": "model 'missing' not found"}
                else:
                    payload = {
                        "model": body["model"],
                        "created_at": "2026-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": stand_in.reply},
                        "done": True,
                        "done_reason": "stop",
                    }
                data = json.dumps(payload).encode()
                self.send_response(stand_in.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                try:
                    self.end_headers()
                    self.wfile.write(data)
                except BrokenPipeError:
                    return  # the client timed out first, as the timeout test intends

            def log_message(self, *_: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def ollama_stand_in() -> Iterator[OllamaStandIn]:
    stand_in = OllamaStandIn()
    thread = threading.Thread(target=stand_in.server.serve_forever, daemon=True)
    thread.start()
    yield stand_in
    stand_in.server.shutdown()
    stand_in.server.server_close()


OLLAMA_UNUSED = "http://127.0.0.1:9"  # a custom model never calls Ollama
MESSAGES = [ChatMessage(role="system", content="Reply with JSON."), ChatMessage(role="user", content="Hi")]


def test_ollama_backend_sends_the_schema_as_format_and_coerces_the_reply(
    ollama_stand_in: OllamaStandIn,
) -> None:
    settings = Settings(llm="ollama", ollama_url=ollama_stand_in.url, ollama_model="mistral")
    llm = create_llm(settings.generation, settings.ollama_url)

    result = llm.generate_json(MESSAGES, Score, max_tokens=64)

    assert result == Score(label="ok", count=3)
    request = ollama_stand_in.requests[0]
    assert request["path"] == "/api/chat"
    assert request["model"] == "mistral"
    assert request["format"] == Score.model_json_schema()
    assert request["options"]["num_predict"] == 64 and request["options"]["temperature"] == 0
    assert request["stream"] is False
    assert [m["content"] for m in request["messages"]] == ["Reply with JSON.", "Hi"]


def test_ollama_backend_turns_timeouts_errors_and_malformed_replies_into_llm_errors(
    ollama_stand_in: OllamaStandIn,
) -> None:
    llm = OllamaLLM(ollama_stand_in.url, "mistral", timeout_s=0.5)

    ollama_stand_in.reply = '{"label": "ok", "count": "many"}'
    with pytest.raises(LLMError, match="does not fit Score"):
        llm.generate_json(MESSAGES, Score)
    ollama_stand_in.status = 404
    with pytest.raises(LLMError, match="not found"):
        llm.generate_json(MESSAGES, Score)
    ollama_stand_in.status, ollama_stand_in.delay_s = 200, 1.5
    with pytest.raises(LLMError, match="Timeout"):
        llm.generate_text(MESSAGES)


def test_json_replies_are_found_inside_fences_and_prose() -> None:
    raw = 'Here you go:\n```json\n{"label": "x", "count": 2}\n```\nAnything else?'
    assert parse_json_reply(raw, Score) == Score(label="x", count=2)
    with pytest.raises(LLMError, match="no JSON object"):
        parse_json_reply("I cannot help with that.", Score)


def test_custom_backend_is_built_from_the_factory_setting_and_needs_one() -> None:
    settings = GenerationSettings(llm="custom", llm_factory="tests.synthesizer.scripted_llm:flaky")
    assert isinstance(create_llm(settings, OLLAMA_UNUSED), FlakyLLM)
    with pytest.raises(LLMError, match="HINDSIGHT_LLM_FACTORY"):
        create_llm(GenerationSettings(llm="custom"), OLLAMA_UNUSED)
    with pytest.raises(LLMError, match="module:callable"):
        create_llm(GenerationSettings(llm="custom", llm_factory="no_colon_here"), OLLAMA_UNUSED)


class Entry(BaseModel):
    name: str


class Entries(BaseModel):
    entries: list[Entry]


def test_a_reply_cut_off_by_the_token_limit_keeps_its_finished_entries() -> None:
    raw = '{"entries": [{"name": "a \\" } ]"}, {"name": "b"}, {"name": "c is cut o'
    assert parse_json_reply(raw, Entries) == Entries(entries=[Entry(name='a " } ]'), Entry(name="b")])
    with pytest.raises(LLMError):
        parse_json_reply('{"entries": [{"name": "nothing finished', Entries)
