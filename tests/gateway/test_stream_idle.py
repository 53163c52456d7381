"""``HINDSIGHT_STREAM_IDLE_S`` ends every kind of event stream that goes quiet, with a ``failed`` event:
a scrape job's stream took the scrape lock's lifetime instead (JOB_TIME_LIMIT_S + 60 s, about an hour),
so a scrape that no worker takes held its stream, and the by-hand schemathesis run of issue 34 that
followed one, for that long (the gateway's keep-alive pings kept the client's read timeout from firing).

A real gateway process with no workers behind it, accepting work for them
(``HINDSIGHT_REFUSE_WITHOUT_WORKERS=false``, as the fuzzing stack runs)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.api_keys import KeyFile
from testing.processes import free_port
from tests.gateway.conftest import hindsight_env, running_gateway

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("library")


@pytest.fixture(scope="module")
def api(redis_url: str, library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    data_dir = tmp_path_factory.mktemp("data")
    env = hindsight_env(
        data_dir, redis_url, free_port(), HINDSIGHT_ROOTS=str(library), HINDSIGHT_STREAM_IDLE_S="1",
        HINDSIGHT_REFUSE_WITHOUT_WORKERS="false",
    )  # fmt: skip
    with running_gateway(env, data_dir) as gateway:
        key = KeyFile(data_dir / "api_keys.json").create("idle")[1]
        with gateway.client(key) as client:
            yield client


def followed(api: httpx.Client, events_url: str, give_up_s: float = 20) -> tuple[float, list[str]]:
    """Seconds until the stream at ``events_url`` ended (or ``give_up_s``, when it did not), and its
    ``data:`` lines."""
    started = time.monotonic()
    lines = []
    with api.stream("GET", events_url, timeout=30) as stream:
        for line in stream.iter_lines():  # the gateway's keep-alive comments come every 15 s
            lines += [line] if line.startswith("data:") else []
            if time.monotonic() - started > give_up_s:
                break
    return time.monotonic() - started, lines


def test_a_scrape_stream_no_worker_feeds_ends_after_the_idle_limit(api: httpx.Client) -> None:
    accepted = api.post("/v1/scrape", json={})
    assert accepted.status_code == 202, accepted.text
    took, lines = followed(api, accepted.json()["events_url"])
    assert took < 10, f"the scrape stream stayed open {took:.0f}s"
    assert lines and '"status":"failed"' in lines[-1]


def test_an_index_stream_no_worker_feeds_ends_after_the_idle_limit(api: httpx.Client, library: Path) -> None:
    accepted = api.post("/v1/index", json={"root": str(library)})
    assert accepted.status_code == 202, accepted.text
    took, lines = followed(api, accepted.json()["events_url"])
    assert took < 10 and '"status":"failed"' in lines[-1]
