"""F5, F9, F10, F12, F13, F14, F15: a real gateway process over real HTTP refuses bad input with 4xx,
never 500; answers only its own host names; tells browsers to run nothing foreign; ends streams;
keeps health details and their cost behind a key."""

from __future__ import annotations

import concurrent.futures
import os
import runpy
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from services.gateway.security import InlineBlocks, source_hashes
from shared.api_keys import KeyFile
from shared.events import EventStream
from testing.processes import free_port, wait_for
from tests.gateway.conftest import REPO, Gateway, hindsight_env, running_gateway

pytestmark = pytest.mark.integration
PAGE = REPO / "services" / "gateway" / "static" / "index.html"


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("library")


@pytest.fixture(scope="module")
def gateway(redis_url: str, library: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway with no workers behind it, one root, short job limits and a cap of two streams a key."""
    data_dir = tmp_path_factory.mktemp("data")
    port = free_port()
    env = hindsight_env(
        data_dir, redis_url, port,
        HINDSIGHT_ROOTS=str(library), HINDSIGHT_MAX_STREAMS_PER_KEY="2",
        HINDSIGHT_JOB_SOFT_TIME_LIMIT_S="1", HINDSIGHT_JOB_TIME_LIMIT_S="2",
        HINDSIGHT_RATE_LIMIT_PER_MINUTE="1000", HINDSIGHT_SEARCH_TIMEOUT_S="1",
        HINDSIGHT_GATEWAY_HEAD_TIMEOUT_S="1",
    )  # fmt: skip
    with running_gateway(env, data_dir) as running:
        yield running


@pytest.fixture(scope="module")
def key(gateway: Gateway) -> str:
    return KeyFile(gateway.data_dir / "api_keys.json").create("security")[1]


@pytest.fixture(scope="module")
def api(gateway: Gateway, key: str) -> Iterator[httpx.Client]:
    with gateway.client(key) as client:
        yield client


# F9, F10 -------------------------------------------------------------------------------------------


def test_a_lone_surrogate_in_any_json_string_gets_422_not_500(api: httpx.Client) -> None:
    for url, body in (
        ("/v1/questions", b'{"question": "why \\ud800?"}'),
        ("/v1/index", b'{"root": "/tmp/\\ud800"}'),
        ("/v1/search", b'{"query": "\\udfff"}'),
        ("/v1/watch", b'{"root": "/\\ud800"}'),
    ):
        response = api.post(url, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, url
        assert "surrogate" in response.json()["detail"][0]["msg"]


def test_nul_bytes_overlong_and_relative_paths_get_422_with_field_errors(
    api: httpx.Client, library: Path
) -> None:
    for root in (f"{library}/\x00x", "/" + "a" * 6000, "relative/folder"):
        for response in (
            api.post("/v1/index", json={"root": root}),
            api.post("/v1/watch", json={"root": root}),
        ):
            assert response.status_code == 422
            assert response.json()["detail"][0]["loc"] == ["body", "root"]
    assert api.delete("/v1/watch", params={"root": "/tmp/\x00"}).status_code == 422


def test_a_home_folder_of_no_user_is_outside_the_roots_not_a_404_that_reads_as_a_missing_question(
    api: httpx.Client,
) -> None:
    """Issue 34's schemathesis run (stateful, ST302): the note of a question just created answered 404
    for ``{"folder": "~½±…"}`` ("Could not determine home directory"), which reads as the question
    not being found. ``~name`` of no user names no folder inside the roots: 403, like any path outside
    them (the schema admits ``~name``, so a 422 would refuse a request the schema allows)."""
    for url, field in (
        ("/v1/questions/0123abcd/note", "folder"),
        ("/v1/index", "root"),
        ("/v1/watch", "root"),
    ):
        response = api.post(url, json={field: "~no-such-user-34/notes"})
        assert response.status_code == 403, (url, response.text)
        assert "~no-such-user-34/notes starts with the home folder of no user" in response.json()["detail"]


def test_deeply_nested_json_gets_422_not_500(api: httpx.Client) -> None:
    nested = b'{"query": "x", "filters": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    assert (
        api.post("/v1/search", content=nested, headers={"content-type": "application/json"}).status_code
        == 422
    )


def test_a_date_without_a_utc_time_gets_422(api: httpx.Client) -> None:
    response = api.post(
        "/v1/search", json={"query": "bread", "filters": {"date_from": "0001-01-01T00:00:00+01:00"}}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][-1] == "date_from"


def test_validation_errors_do_not_echo_the_input(api: httpx.Client) -> None:
    response = api.post("/v1/index", json={"root": "not-absolute-secret-token"})
    assert response.status_code == 422 and "secret-token" not in response.text


def test_a_garbage_last_event_id_replays_the_stream_instead_of_cutting_it(
    api: httpx.Client, library: Path
) -> None:
    job = api.post("/v1/index", json={"root": str(library)}).json()
    for resume in ("not-an-id; DROP", "1-99999999999999999999", "0-0"):
        with api.stream("GET", job["events_url"], headers={"Last-Event-ID": resume}, timeout=60) as stream:
            lines = list(stream.iter_lines())
        assert stream.status_code == 200
        assert "event: index" in lines, resume  # the stream ran to its (failed) end


def test_a_far_future_last_event_id_on_a_finished_stream_ends_it_at_once(
    api: httpx.Client, gateway: Gateway, library: Path
) -> None:
    """F13: resuming past the end of a finished stream closes it at once, with no event (before, it
    stayed open until the idle limit, ~20 minutes for a question, then sent a made-up failure)."""
    job = api.post("/v1/index", json={"root": str(library)}).json()
    events = EventStream(job["job_id"], client=redis.Redis.from_url(gateway.env["HINDSIGHT_REDIS_URL"]))
    events.emit("index", "done", "indexed")
    for resume in ("18446744073709551615-18446744073709551615", "99999999999999-0"):
        started = time.monotonic()
        with api.stream("GET", job["events_url"], headers={"Last-Event-ID": resume}, timeout=10) as stream:
            lines = list(stream.iter_lines())
        assert stream.status_code == 200 and not any(line.startswith("data:") for line in lines), lines
        assert time.monotonic() - started < 1.5
    with api.stream("GET", job["events_url"], timeout=10) as stream:  # from the start: the whole stream
        assert "event: index" in list(stream.iter_lines())


def test_a_scrape_flag_that_is_not_a_boolean_gets_422(api: httpx.Client) -> None:
    """Schemathesis's ST201 case: ``{"refetch_all": 0}`` was taken for ``false``."""
    for value in (0, 1, "false", "yes", None):
        response = api.post("/v1/scrape", json={"refetch_all": value})
        assert response.status_code == 422, (value, response.text)
        assert response.json()["detail"][0]["loc"][-1] == "refetch_all"


def test_a_refusal_names_the_folder_as_asked_never_where_its_link_leads(
    api: httpx.Client, library: Path, tmp_path: Path
) -> None:
    """The smaller finding: a 403 printed the resolved path, so a client learnt where a link in a
    root leads (a folder outside the roots, or a system folder such as ``/dev/shm``)."""
    elsewhere = tmp_path / "private-target-of-the-link"
    elsewhere.mkdir()
    links = {library / "to-elsewhere": elsewhere, library / "to-system": Path("/dev/shm")}
    try:
        for link, target in links.items():
            link.symlink_to(target)
            for response in (
                api.post("/v1/index", json={"root": str(link)}),
                api.post("/v1/watch", json={"root": str(link)}),
            ):
                detail = response.json()["detail"]
                assert response.status_code == 403, detail
                assert detail.startswith(f"{link} is ") and str(target) not in detail, detail
    finally:
        for link in links:
            link.unlink(missing_ok=True)


def test_connections_that_never_finish_their_request_head_are_closed(gateway: Gateway, key: str) -> None:
    """Slowloris: silent connections and half-sent heads are closed after the head timeout (1 s
    here), while a complete request on a kept-alive connection is answered as before."""
    port = int(gateway.url.rsplit(":", 1)[1])
    partial = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(40)]
    for number, connection in enumerate(held):
        if number % 2:
            connection.sendall(partial)
    time.sleep(2)
    for connection in held:
        assert connection.recv(1) == b"", "the server kept a connection that sent no whole head"
        connection.close()
    with gateway.client(key) as api:
        assert api.get("/v1/questions/none").status_code == 404
        time.sleep(0.2)
        assert api.get("/v1/questions/none").status_code == 404  # the same kept-alive connection


def test_a_body_that_is_not_utf8_gets_422(api: httpx.Client) -> None:
    response = api.post("/v1/search", content=b"\xff\xfe{", headers={"content-type": "application/json"})
    assert response.status_code == 422 and "UTF-8" in response.json()["detail"][0]["msg"]


# F12 -----------------------------------------------------------------------------------------------


def test_requests_for_a_foreign_host_name_are_refused(gateway: Gateway, key: str) -> None:
    for path in ("/metrics", "/v1/questions/x", "/"):
        response = httpx.get(gateway.url + path, headers={"Host": "attacker.example", "X-API-Key": key})
        assert response.status_code == 400, path
    assert httpx.get(gateway.url + "/metrics", headers={"Host": "localhost:1234"}).status_code == 200


def test_the_page_runs_only_its_own_script_and_cannot_be_framed_or_sniffed(gateway: Gateway) -> None:
    response = httpx.get(gateway.url + "/")
    policy = response.headers["content-security-policy"]
    parser = InlineBlocks()
    parser.feed(PAGE.read_text())
    inline = source_hashes(parser.blocks["script"])
    assert f"script-src 'self'{' ' + inline if inline else ''};" in policy
    for script in ("page.js", "markdown-it.min.js", "purify.min.js"):  # the renderer and sanitiser too
        served = httpx.get(f"{gateway.url}/static/{script}")
        assert served.headers["content-type"].startswith("text/javascript")
    assert httpx.get(gateway.url + "/static/licenses").status_code == 404
    assert httpx.get(gateway.url + "/static/index.html").status_code == 404, "only the page's own files"
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert httpx.get(gateway.url + "/v1/questions/x").headers["x-content-type-options"] == "nosniff"


def test_no_docs_page_loads_scripts_from_elsewhere(gateway: Gateway) -> None:
    for path in ("/docs", "/redoc"):
        assert httpx.get(gateway.url + path).status_code == 404
    assert httpx.get(gateway.url + "/openapi.json").json()["info"]["title"] == "Hindsight"


# F13 -----------------------------------------------------------------------------------------------


def test_an_index_job_no_worker_takes_ends_failed_in_its_status_and_its_stream(
    api: httpx.Client, library: Path
) -> None:
    job = api.post("/v1/index", json={"root": str(library)}).json()
    with api.stream("GET", job["events_url"], timeout=60) as stream:
        events = [line for line in stream.iter_lines() if line.startswith(("event:", "data:"))]
    assert events[-2] == "event: index" and '"status":"failed"' in events[-1]
    status = api.get(job["status_url"]).json()
    assert status["status"] == "failed" and "no progress" in status["error"]


def test_a_question_id_is_not_an_index_job_id(api: httpx.Client, library: Path) -> None:
    job = api.post("/v1/index", json={"root": str(library)}).json()
    assert api.get(f"/v1/questions/{job['job_id']}/events").status_code == 404
    assert api.get(f"/v1/questions/{job['job_id']}").status_code == 404


def test_one_key_may_hold_only_so_many_streams_open(gateway: Gateway, key: str, library: Path) -> None:
    clients = [gateway.client(key) for _ in range(3)]
    jobs = [clients[0].post("/v1/index", json={"root": str(library)}).json() for _ in range(3)]
    opened = [c.stream("GET", j["events_url"], timeout=30) for c, j in zip(clients, jobs, strict=True)]
    first, second = opened[0].__enter__(), opened[1].__enter__()
    try:
        assert first.status_code == second.status_code == 200
        refused = clients[2].get(jobs[2]["events_url"])
        assert refused.status_code == 429 and "streams" in refused.json()["detail"]
    finally:
        opened[0].__exit__(None, None, None)
        opened[1].__exit__(None, None, None)
        for client in clients:
            client.close()

    def reopened() -> bool:
        with gateway.client(key) as client, client.stream("GET", jobs[2]["events_url"], timeout=30) as stream:
            return stream.status_code == 200

    wait_for(reopened, 30, "a closed stream to free its place")


# F5, F14 -------------------------------------------------------------------------------------------


def publishes(redis_url: str) -> int:
    """How many PUBLISH commands Redis has run: each health broadcast to the workers is one."""
    stats = redis.Redis.from_url(redis_url).info("commandstats")
    return int(stats.get("cmdstat_publish", {}).get("calls", 0))


def test_healthz_is_cheap_and_tells_nothing_without_a_key(gateway: Gateway, redis_url: str) -> None:
    before = publishes(redis_url)
    with concurrent.futures.ThreadPoolExecutor(30) as pool:
        replies = list(pool.map(lambda _: httpx.get(gateway.url + "/healthz").json(), range(30)))
    assert replies == [{"status": "ok"}] * 30
    assert publishes(redis_url) == before
    assert httpx.get(gateway.url + "/v1/health").status_code == 401


def test_detailed_health_needs_a_key_and_concurrent_callers_share_one_broadcast(
    gateway: Gateway, key: str, redis_url: str
) -> None:
    time.sleep(2.5)  # let any earlier reading expire (HINDSIGHT_HEALTH_CACHE_S is 2 s)
    before = publishes(redis_url)
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        replies = list(pool.map(lambda _: gateway.client(key).get("/v1/health").json(), range(20)))
    assert {reply["status"] for reply in replies} == {"degraded"}
    assert publishes(redis_url) - before <= 2


# F15 -----------------------------------------------------------------------------------------------


def flower_config(credentials: str) -> dict[str, object]:
    os.environ["HINDSIGHT_FLOWER_BASIC_AUTH"] = credentials
    try:
        return runpy.run_path(str(REPO / "deploy" / "flower" / "flowerconfig.py"))
    finally:
        del os.environ["HINDSIGHT_FLOWER_BASIC_AUTH"]


def test_flower_refuses_empty_passwords_and_listens_on_loopback_unless_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HINDSIGHT_FLOWER_ADDRESS", raising=False)
    for credentials in ("admin:", ":secret", "admin:s3cret,guest:"):
        with pytest.raises(SystemExit, match="without a user or a password"):
            flower_config(credentials)
    assert flower_config("admin:s3cret")["address"] == "127.0.0.1"


def test_the_gateway_process_never_answers_500_to_the_probes(gateway: Gateway) -> None:
    log = (gateway.data_dir / "gateway.log").read_text()
    assert "Traceback" not in log and " 500" not in log
