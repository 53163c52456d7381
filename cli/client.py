"""A small HTTP client of the gateway, used by the CLI (and by anyone scripting Hindsight)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from cli.listeners import refuse_foreign_listener
from cli.local_key import client_key
from shared.contracts import (
    Answer,
    Event,
    QuestionOptions,
    ScanReport,
    SearchRequest,
    SearchResponse,
)
from shared.settings import get_settings

NOT_RUNNING = "Hindsight isn't running — start it with `hindsight up`"


class GatewayError(RuntimeError):
    """The gateway refused a request; the message is one sentence: what was refused and how to fix it."""

    def __init__(self, status_code: int, reason: str, retry_after: str | None = None) -> None:
        super().__init__(explain_refusal(status_code, reason, retry_after))
        self.status_code = status_code
        self.retry_after = retry_after


def explain_refusal(status_code: int, reason: str, retry_after: str | None = None) -> str:
    """A refusal in one sentence with its fix (401: the key; 429/503: when to retry); any other
    refusal (403 outside the roots, 404, 409, 422) is the gateway's own sentence."""
    if status_code == 401:
        return (
            f"the gateway refused the API key ({reason}): set HINDSIGHT_API_KEY to a key from "
            "`hindsight keys create`, or run `hindsight up` to give this CLI its own"
        )
    retry = f"; retry in {retry_after} s" if retry_after else ""
    return f"{reason}{retry}"


def transport_failure(exc: httpx.TransportError) -> str:
    """A request that got no answer: nothing listening means Hindsight is not running."""
    if isinstance(exc, httpx.ConnectError):
        return NOT_RUNNING
    if isinstance(exc, httpx.TimeoutException):
        return "the gateway did not answer in time; `hindsight status` shows which workers are live"
    return f"the connection to the gateway failed ({exc}); `hindsight status` shows what is running"


def detail_sentence(detail: object) -> str:
    """FastAPI's ``detail``: a string as it is; a validation error list as ``field: message`` parts."""
    if isinstance(detail, list):
        parts = []
        for error in detail:
            if isinstance(error, dict):
                where = ".".join(str(p) for p in error.get("loc", []) if p != "body")
                parts.append(f"{where}: {error.get('msg', '')}" if where else str(error.get("msg", "")))
        if parts:
            return "the request was refused: " + "; ".join(parts)
    return str(detail)


def server_sent_events(response: httpx.Response) -> Iterator[Event]:
    """Parse ``data:`` lines of a text/event-stream into events."""
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            yield Event.model_validate_json("\n".join(data))
            data = []


class GatewayClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout_s: float = 30.0) -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s)

    def _checked(self, response: httpx.Response) -> httpx.Response:
        if response.is_error:
            response.read()
            try:
                reason = detail_sentence(response.json().get("detail", response.text))
            except (ValueError, AttributeError):
                reason = response.text or response.reason_phrase
            raise GatewayError(response.status_code, reason, response.headers.get("retry-after"))
        return response

    def ask(self, question: str, options: QuestionOptions | None = None) -> str:
        body = {"question": question, "options": (options or QuestionOptions()).to_payload()}
        return str(self._checked(self._http.post("/v1/questions", json=body)).json()["id"])

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

    def index_report(self, job_id: str) -> ScanReport | None:
        body = self._checked(self._http.get(f"/v1/index/{job_id}")).json()
        return ScanReport.model_validate(body["report"]) if body.get("report") else None

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
    refuse_foreign_gateway(settings.gateway_url)
    return GatewayClient(settings.gateway_url, client_key(settings))
