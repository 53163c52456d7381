"""N7: text a file controls (a thread's title, a turn's question, a path, a quote) never drives the
user's terminal.

The titles are the red team's: ``ESC]0;`` sets the window title, ``ESC[2J`` clears the screen, an
OSC-8 hyperlink labelled ``notes.md`` leads to another host, and ``[/red]`` is rich markup that
crashed ``hindsight ask``. The real CLI runs in its own process, with a colour terminal forced, against
a stand-in gateway on loopback that serves the answer and search result such a file produces (the
stand-in replaces the whole question pipeline, which is not what is under test; the payloads are the
contracts' own ``Answer`` and ``SearchResponse``)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from shared.contracts import Answer, Candidate, Chunk, Citation, Event, SearchMode, SearchResponse, SourceKind
from tests.conftest import REPO, run_hindsight

ESC = "\x1b"
HOSTILE_TITLE = (
    f"{ESC}]0;pwned by a thread title\x07{ESC}[2J"
    f"{ESC}]8;;https://evil.example/steal{ESC}\\notes.md{ESC}]8;;{ESC}\\ [/red] [bold]x"
)
HOSTILE_PATH = f"/notes/[/red]{ESC}[2Jplan.md"
# A thread's turn question is a heading of the file: it reaches the source line after the title.
HOSTILE_TURN = f"How long? {ESC}]0;pwned by a turn question\x07 [/red]"


def answer() -> Answer:
    citation = Citation(
        number=1, document_id="d", chunk_id="d:0", title=HOSTILE_TITLE, source_uri=HOSTILE_PATH,
        char_start=0, char_end=20, line=3, quote=f"rye {ESC}]0;x\x07 proofs slowly", verified=True,
        turn_question=HOSTILE_TURN,
    )  # fmt: skip
    markdown = f"Rye proofs slowly [1]. {ESC}[2J[notes.md](https://evil.example/steal) {ESC}]0;t\x07"
    return Answer(question_id="q1", question="rye?", markdown=markdown, citations=[citation])


def search_result() -> SearchResponse:
    text = f"rye {ESC}[2J proofs [/red] slowly"
    chunk = Chunk(
        id="d:0", document_id="d", ordinal=0, text=text, char_start=0, char_end=len(text),
        title=HOSTILE_TITLE, source_uri=HOSTILE_PATH, kind=SourceKind.MARKDOWN,
    )  # fmt: skip
    return SearchResponse(
        query="rye",
        mode=SearchMode.AUTO,
        resolved_mode=SearchMode.HYBRID,
        candidates=[Candidate(chunk=chunk, ranks={"dense": 1})],
        notes=[f"note from {HOSTILE_TITLE}"],
    )


class StandIn(BaseHTTPRequestHandler):
    def reply(self, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/questions":
            accepted = {
                "id": "q1",
                "conversation_id": "q1",
                "status_url": "/v1/questions/q1",
                "events_url": "/v1/questions/q1/events",
            }  # the gateway's QuestionAccepted
            self.reply(json.dumps(accepted).encode())
        else:
            self.reply(search_result().model_dump_json().encode())

    def do_GET(self) -> None:
        stage = Event(stream_id="q1", stage="map", status="done", detail=f"read {HOSTILE_TITLE}")
        done = Event(
            stream_id="q1", stage="answer", status="done", data={"answer": answer().model_dump(mode="json")}
        )
        body = "".join(
            f"id: {i}-0\nevent: {e.stage}\ndata: {e.model_dump_json()}\n\n"
            for i, e in enumerate([stage, done], 1)
        )
        self.reply(body.encode(), "text/event-stream")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def cli_output(gateway: str, tmp_path: Path, *argv: str, terminal: bool = True) -> str:
    """What ``hindsight ARGV`` prints, with a colour terminal forced (``terminal``) or not."""
    env = {
        **os.environ, "PYTHONPATH": str(REPO), "HINDSIGHT_DATA_DIR": str(tmp_path / "data"),
        "HINDSIGHT_GATEWAY_URL": gateway, "HINDSIGHT_API_KEY": "hs_0123abcd_key",
        "TERM": "xterm-256color", "COLUMNS": "200",
    }  # fmt: skip
    if terminal:
        env["FORCE_COLOR"] = "1"
    return run_hindsight(env, *argv, timeout_s=60)


def assert_inert(output: str) -> None:
    """Only rich's own codes (colours, its spinner's cursor) may reach the terminal: no OSC (window
    title, hyperlink to another host), no bell, no clear screen; the link's address is plain text."""
    assert f"{ESC}]" not in output and "\x07" not in output
    assert f"{ESC}[2J" not in output
    assert "\ufffd]0;pwned" in output, "the escape shows as a visible replacement character"


def test_ask_prints_hostile_titles_paths_and_quotes_as_inert_text(gateway: str, tmp_path: Path) -> None:
    output = cli_output(gateway, tmp_path, "ask", "--stages", "rye?")
    assert_inert(output)
    assert "[/red]" in output and "notes.md" in output and "plan.md:3" in output
    assert "How long? \ufffd]0;pwned by a turn question\ufffd" in output


def test_search_prints_hostile_titles_paths_and_passages_as_inert_text(gateway: str, tmp_path: Path) -> None:
    output = cli_output(gateway, tmp_path, "search", "rye")
    assert_inert(output)
    assert "[/red]" in output


def test_ask_json_output_keeps_the_text_exactly(gateway: str, tmp_path: Path) -> None:
    """``--json`` is for programs: the answer is valid JSON with the title as the file has it."""
    output = cli_output(gateway, tmp_path, "ask", "--json", "rye?", terminal=False)
    assert json.loads(output)["citations"][0]["title"] == HOSTILE_TITLE
