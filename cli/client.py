"""A small HTTP client of the gateway, used by the CLI (and by anyone scripting Hindsight)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from cli.listeners import refuse_foreign_listener
from cli.local_key import client_key
from shared.contracts import (
    Answer,
    Event,
    IndexProgress,
    QuestionOptions,
    ScanReport,
    SearchRequest,
    SearchResponse,
)
from shared.refusals import NOT_RUNNING, EventLines, refusal_of, transport_failure
from shared.settings import get_settings

__all__ = ["NOT_RUNNING", "GatewayClient", "GatewayError", "default_client", "transport_failure"]


class GatewayError(RuntimeError):
    """The gateway refused a request; the message is one sentence: what was refused and how to fix it."""

    def __init__(self, status_code: int, sentence: str, retry_after: str | None = None) -> None:
        super().__init__(sentence)
        self.status_code = status_code
        self.retry_after = retry_after


def server_sent_events(response: httpx.Response) -> Iterator[Event]:
    """Parse ``data:`` lines of a text/event-stream into events."""
    lines = EventLines()
    for line in response.iter_lines():
        event = lines.feed(line)
        if event is not None:
            yield event


@dataclass(frozen=True)
class Accepted:
    """A question the gateway accepted, and the conversation it belongs to."""

    id: str
    conversation_id: str


class GatewayClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout_s: float = 30.0) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s)

    def _checked(self, response: httpx.Response) -> httpx.Response:
        if response.is_error:
            response.read()
            retry_after = response.headers.get("retry-after")
            raise GatewayError(response.status_code, refusal_of(response), retry_after)
        return response

    def ask(self, question: str, options: QuestionOptions | None = None) -> str:
        return self.submit(question, options).id

    def submit(
        self, question: str, options: QuestionOptions | None = None, conversation_id: str | None = None
    ) -> Accepted:
        """Ask; with ``conversation_id`` as a follow-up of that conversation."""
        body: dict[str, object] = {
            "question": question,
            "options": (options or QuestionOptions()).to_payload(),
        }
        if conversation_id:
            body["conversation_id"] = conversation_id
        reply = self._checked(self._http.post("/v1/questions", json=body)).json()
        return Accepted(id=str(reply["id"]), conversation_id=str(reply["conversation_id"]))

    def latest_conversation(self) -> str | None:
        """The conversation of the caller's most recent question, if any is still kept."""
        recent = self._checked(self._http.get("/v1/questions", params={"limit": 1})).json()
        return str(recent[0]["conversation_id"]) if recent else None

    def follow(self, path: str) -> Iterator[Event]:
        with self._http.stream("GET", path, timeout=httpx.Timeout(30.0, read=None)) as response:
            self._checked(response)
            yield from server_sent_events(response)

    def question_events(self, question_id: str) -> Iterator[Event]:
        return self.follow(f"/v1/questions/{question_id}/events")

    def cancel(self, question_id: str) -> None:
        """Cancel a question: its stream ends failed and its queued stages are dropped."""
        self._checked(self._http.delete(f"/v1/questions/{question_id}"))

    def answer(self, question_id: str) -> Answer | None:
        body = self._checked(self._http.get(f"/v1/questions/{question_id}")).json()
        return Answer.model_validate(body["answer"]) if body.get("answer") else None

    def index(self, root: str, force: bool = False) -> str:
        body = {"root": root, "force": force}
        return str(self._checked(self._http.post("/v1/index", json=body)).json()["job_id"])

    def index_events(self, job_id: str) -> Iterator[Event]:
        return self.follow(f"/v1/index/{job_id}/events")

    def cancel_index(self, job_id: str) -> IndexProgress | None:
        """Cancel an index job (``DELETE /v1/index/{job}``); its progress then, if it still runs."""
        body = self._checked(self._http.delete(f"/v1/index/{job_id}")).json()
        return IndexProgress.model_validate(body["progress"]) if body.get("progress") else None

    def index_report(self, job_id: str) -> ScanReport | None:
        body = self._checked(self._http.get(f"/v1/index/{job_id}")).json()
        return ScanReport.model_validate(body["report"]) if body.get("report") else None

    def scrape(self, refetch_all: bool = False) -> str:
        """Start the scrape job (``POST /v1/scrape``); its id."""
        body = {"refetch_all": refetch_all}
        return str(self._checked(self._http.post("/v1/scrape", json=body)).json()["job_id"])

    def scrape_events(self, job_id: str) -> Iterator[Event]:
        """The scrape job's events, then those of the index job it queued (same id)."""
        return self.follow(f"/v1/scrape/{job_id}/events")

    def evidence(self, question_id: str, number: int) -> dict[str, object]:
        return dict(self._checked(self._http.get(f"/v1/questions/{question_id}/citations/{number}")).json())

    def search(self, request: SearchRequest, timeout_s: float) -> SearchResponse:
        response = self._http.post("/v1/search", json=request.to_payload(), timeout=timeout_s)
        return SearchResponse.model_validate(self._checked(response).json())

    def health(self) -> dict[str, object]:
        """Redis, live workers per queue and reranker modes (``GET /v1/health``, needs the key)."""
        return dict(self._checked(self._http.get("/v1/health")).json())

    def library(self) -> list[dict[str, Any]]:
        """The folders indexed or watched: ``root``, ``watched``, ``documents``, ``last_report``."""
        return list(self._checked(self._http.get("/v1/library")).json())


def refuse_foreign_gateway(gateway_url: str) -> None:
    """:class:`UntrustedListenerError` when another local user holds the gateway's port: neither the
    key nor a question may reach their process (nor a browser, whose page could read the key)."""
    url = httpx.URL(gateway_url)
    refuse_foreign_listener(url.host, url.port or (443 if url.scheme == "https" else 80), "Hindsight")


def default_client() -> GatewayClient:
    """A client of the configured gateway, with this CLI's key when the gateway demands one; refused
    when another local user holds the gateway's port (:func:`refuse_foreign_gateway`)."""
    settings = get_settings()
    refuse_foreign_gateway(settings.gateway.gateway_url)
    return GatewayClient(settings.gateway.gateway_url, client_key(settings))
