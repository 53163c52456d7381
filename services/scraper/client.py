"""Perplexity's REST endpoints, called from inside the logged-in page, with a retry policy.

Requests run as ``fetch(..., {credentials: "include"})`` in the page so cookies and the
browser's TLS fingerprint are the real ones. :class:`RetryPolicy` backs off with jitter on 429,
5xx, network errors and HTML interstitials, honouring ``Retry-After``; 401/403 and Cloudflare
challenges abort at once, because waiting cannot fix them.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urlencode

from services.scraper.errors import CloudflareChallenge, NotLoggedIn, RequestFailed, ThreadGone

log = logging.getLogger(__name__)

DEFAULT_API_VERSION = "2.18"
MAX_RETRY_AFTER_S = 600.0
GONE_CODES = ("ENTRY_DELETED", "ENTRY_EXPIRED", "VIEW_THREAD_NOT_ALLOWED", "THREAD_NOT_FOUND")
CHALLENGE_MARKERS = (
    "just a moment",
    "checking your browser",
    "verify you are human",
    "performing security verification",
    "cf-browser-verification",
    "cloudflare-challenge",
)
RELOGIN_HINT = "Run `hindsight scrape --login` to log in again in a browser window."
CHALLENGE_HINT = (
    "Perplexity answered with a Cloudflare challenge page instead of data. Run `hindsight scrape --login` "
    "to solve it in a browser window, then scrape again with HINDSIGHT_SCRAPE_HEADLESS unset or false "
    "(restart Hindsight after changing it): Cloudflare challenges headless browsers. "
    "Nothing exported so far is lost; the next run resumes from the checkpoint."
)


@dataclass(frozen=True)
class HttpResult:
    """What one in-page request returned; ``status`` 0 means the request itself failed."""

    status: int
    body: str
    content_type: str = ""
    retry_after: str | None = None


class Transport(Protocol):
    def request(self, method: str, url: str, body: Any | None, headers: dict[str, str]) -> HttpResult: ...


def is_challenge(result: HttpResult) -> bool:
    """A Cloudflare challenge is HTML, whatever the status (403, 503, even 200)."""
    if "json" in result.content_type:
        return False
    head = result.body[:20_000].lower()
    return any(marker in head for marker in CHALLENGE_MARKERS)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


def decode_response(result: HttpResult, what: str) -> Any:
    """The JSON body of a successful response, or the error that says what to do next."""
    if is_challenge(result):
        raise CloudflareChallenge(f"{what}: {CHALLENGE_HINT}")
    status = result.status
    gone = next((code for code in GONE_CODES if code in result.body[:2000]), None)
    if gone and status in (400, 403, 404):
        raise ThreadGone(f"{what}: {gone}")
    if status in (401, 403):
        raise NotLoggedIn(
            f"{what}: Perplexity answered {status}; the saved login has expired. {RELOGIN_HINT}"
        )
    if status == 429 or status >= 500 or status == 0:
        raise Retryable(f"HTTP {status or 'network error'}", parse_retry_after(result.retry_after))
    if status != 200:
        raise RequestFailed(f"{what}: HTTP {status}: {result.body[:200]}")
    try:
        return json.loads(result.body)
    except ValueError:
        raise Retryable("HTTP 200 with a non-JSON body (an interstitial page)") from None


@dataclass
class RetryPolicy:
    """Exponential backoff with jitter: ``min(max, base * 2**attempt) + uniform(0, base)``."""

    max_attempts: int = 4
    base_s: float = 2.0
    max_s: float = 60.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        jitter = self.rng.uniform(0, self.base_s)
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S) + jitter
        return min(self.max_s, self.base_s * 2**attempt) + jitter


@dataclass
class PerplexityClient:
    """Calls ``/rest/...`` with the version the page itself uses, retrying what is worth retrying.

    A Cloudflare challenge in answer to a request is handed to ``clear_challenge`` (the session
    reloads the page and waits the challenge out, or raises :class:`CloudflareChallenge`), then the
    request is sent again, once; without it, the challenge ends the run.
    """

    transport: Transport
    base_url: str
    policy: RetryPolicy
    api_version: str = DEFAULT_API_VERSION
    sleep: Callable[[float], None] = time.sleep
    clear_challenge: Callable[[], None] | None = None

    def url(self, path: str, params: list[tuple[str, str]] | None = None) -> str:
        query = [*(params or []), ("version", self.api_version), ("source", "default")]
        return f"{self.base_url.rstrip('/')}{path}?{urlencode(query)}"

    def _headers(self) -> dict[str, str]:
        return {"accept": "*/*", "x-app-apiclient": "default", "x-app-apiversion": self.api_version}

    def call(self, method: str, url: str, body: Any | None = None, what: str = "") -> Any:
        try:
            return self._call(method, url, body, what or url)
        except CloudflareChallenge:
            if self.clear_challenge is None:
                raise
            log.info("%s: Cloudflare challenge; reloading the page to wait it out", what or url)
            self.clear_challenge()
            return self._call(method, url, body, what or url)

    def _call(self, method: str, url: str, body: Any | None, what: str) -> Any:
        last = ""
        for attempt in range(self.policy.max_attempts):
            result = self.transport.request(method, url, body, self._headers())
            try:
                return decode_response(result, what)
            except Retryable as exc:
                last = str(exc)
                if attempt + 1 == self.policy.max_attempts:
                    break
                pause = self.policy.delay(attempt, exc.retry_after)
                log.info("%s: %s; retrying in %.1fs", what, exc, pause)
                self.sleep(pause)
        raise RequestFailed(f"{what}: still failing after {self.policy.max_attempts} attempts ({last})")

    def get(self, path: str, params: list[tuple[str, str]] | None = None, what: str = "") -> Any:
        return self.call("GET", self.url(path, params), what=what or path)

    def post(self, path: str, body: Any, what: str = "") -> Any:
        return self.call("POST", self.url(path), body=body, what=what or path)
