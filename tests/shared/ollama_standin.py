"""A small local HTTP stand-in of Ollama's ``POST /api/embed`` (the Ollama server cannot run here).

It answers deterministic unit-length vectors derived from each input's text (the real server
L2-normalises every embedding it returns), records every request, and can be told to fail the next
requests with 5xx, to refuse with 404 and the real server's words when the model is not pulled
(``server/routes.go``, ``handleScheduleError``: ``model "NAME" not found, try pulling it first``), to
stall past the client's timeout, to keep failing for inputs containing a marker word, or to answer
an all-zero row in its next replies (as real Ollama 0.5.7 did in 2 of 8 two-input calls after a fresh
model load).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def standin_vector(text: str, dimension: int) -> list[float]:
    """A unit vector that depends only on ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    return (vector / np.linalg.norm(vector)).tolist()


@dataclass
class OllamaStandIn:
    dimension: int = 768
    fail_next: int = 0
    refuse: bool = False
    pulled: tuple[str, ...] = ("nomic-embed-text", "nomic-x")  # the models it has; others are refused
    stall_s: float = 0.0
    poison_word: str | None = None
    zero_rows_next: int = 0
    requests: list[dict[str, object]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> OllamaStandIn:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                standin.requests.append(body)
                status, reply = standin.answer(self.path, body)
                if standin.stall_s:
                    time.sleep(standin.stall_s)
                payload = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
        if path != "/api/embed":
            return 404, {"error": f"no route {path}"}
        if self.refuse or body["model"] not in self.pulled:
            return 404, {"error": f'model "{body["model"]}" not found, try pulling it first'}
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if self.fail_next > 0:
            self.fail_next -= 1
            return 503, {"error": "server busy"}
        if self.poison_word and any(self.poison_word in str(text) for text in inputs):
            return 500, {"error": "llama runner process has terminated"}
        vectors = [standin_vector(str(text), self.dimension) for text in inputs]
        if self.zero_rows_next > 0:
            self.zero_rows_next -= 1
            vectors[-1] = [0.0] * self.dimension
        return 200, {"model": body["model"], "embeddings": vectors}
