"""What a client of the gateway says when a request fails, one sentence with its fix: the CLI prints it,
the MCP tools return it as their error (so an assistant reads the same words a person would)."""

from __future__ import annotations

from typing import Any

import httpx

from shared.contracts import Event

NOT_RUNNING = "Hindsight isn't running — start it with `hindsight up`"
NOTHING_TO_ASK = 'nothing to ask: write the question, e.g. "What did I find out about …?"'
NOTHING_TO_SEARCH = 'nothing to search for: write what to look for, e.g. "rye flour"'


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


def refusal_of(response: httpx.Response) -> str:
    """The sentence for an error response (its body already read)."""
    try:
        body: Any = response.json()
        reason = detail_sentence(body.get("detail", response.text))
    except (ValueError, AttributeError):
        reason = response.text or response.reason_phrase
    return explain_refusal(response.status_code, reason, response.headers.get("retry-after"))


class EventLines:
    """Server-sent events from a text/event-stream's lines, fed one at a time (sync or async reads)."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        """The event a blank line completes, else ``None`` (``data:`` lines are gathered)."""
        if line.startswith("data:"):
            self._data.append(line[5:].lstrip())
        elif not line and self._data:
            event = Event.model_validate_json("\n".join(self._data))
            self._data = []
            return event
        return None
