"""How responses are classified and how long the client waits before retrying."""

from __future__ import annotations

import random

import pytest

from services.scraper.client import HttpResult, Retryable, RetryPolicy, decode_response, parse_retry_after
from services.scraper.errors import CloudflareChallenge, NotLoggedIn, RequestFailed, ThreadGone
from testing.perplexity_replay import CHALLENGE_HTML


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (HttpResult(403, CHALLENGE_HTML, "text/html"), CloudflareChallenge),
        (HttpResult(503, CHALLENGE_HTML, "text/html"), CloudflareChallenge),
        (HttpResult(401, '{"detail":"no"}', "application/json"), NotLoggedIn),
        (HttpResult(403, '{"detail":{"error_code":"FORBIDDEN"}}', "application/json"), NotLoggedIn),
        (HttpResult(400, '{"error":"ENTRY_DELETED"}', "application/json"), ThreadGone),
        (HttpResult(400, '{"error_code":"ENTRY_EXPIRED"}', "application/json"), ThreadGone),
        (HttpResult(403, '{"error_code":"VIEW_THREAD_NOT_ALLOWED"}', "application/json"), ThreadGone),
        (HttpResult(404, '{"detail":"Not Found"}', "application/json"), RequestFailed),
        (HttpResult(429, "{}", "application/json", "3"), Retryable),
        (HttpResult(504, "{}", "application/json"), Retryable),
        (HttpResult(0, "TypeError: Failed to fetch"), Retryable),
        (HttpResult(200, "<html>Something went wrong</html>", "text/html"), Retryable),
    ],
)
def test_responses_map_to_what_the_caller_must_do(result: HttpResult, error: type[Exception]) -> None:
    with pytest.raises(error):
        decode_response(result, "thread x")


def test_success_returns_the_json_body() -> None:
    assert decode_response(HttpResult(200, "[1, 2]", "application/json"), "x") == [1, 2]


def test_backoff_doubles_up_to_the_cap_and_retry_after_wins() -> None:
    policy = RetryPolicy(max_attempts=4, base_s=1.0, max_s=5.0, rng=random.Random(7))

    delays = [policy.delay(attempt, None) for attempt in range(5)]

    for attempt, delay in enumerate(delays):
        floor = min(5.0, 2.0**attempt)
        assert floor <= delay <= floor + 1.0
    assert 30.0 <= policy.delay(0, 30.0) <= 31.0
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None
