"""Auth, limits and backpressure of a real gateway process over real HTTP, on a real Redis."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest
import redis

from shared.api_keys import KeyFile
from shared.events import EventStream
from shared.redis_keys import stream_kind_key
from testing.processes import free_port, wait_for
from tests.gateway.conftest import REPO, Gateway, hindsight_env, start_gateway

QUESTION = {"question": "what did I learn about reranking?"}


def new_key(gateway: Gateway, name: str = "test") -> tuple[str, str]:
    record, key = KeyFile(gateway.data_dir / "api_keys.json").create(name)
    return record.id, key


def test_missing_key_is_refused_with_401_and_a_reason(gateway: Gateway) -> None:
    response = gateway.client().post("/v1/questions", json=QUESTION)
    assert response.status_code == 401
    assert "missing API key" in response.json()["detail"]
    assert response.headers["www-authenticate"] == "Bearer"


def test_wrong_key_is_refused(gateway: Gateway) -> None:
    _, key = new_key(gateway)
    response = gateway.client(key[:-4] + "AAAA").get("/v1/questions/nope")
    assert response.status_code == 401
    assert response.json()["detail"] == "unknown API key"


def test_keys_are_stored_hashed_never_in_plaintext(gateway: Gateway) -> None:
    _, key = new_key(gateway)
    stored = (gateway.data_dir / "api_keys.json").read_text()
    assert key not in stored
    assert key.split("_", 2)[2] not in stored  # the secret may itself contain "_"


def test_valid_key_is_accepted_in_either_header(gateway: Gateway) -> None:
    _, key = new_key(gateway)
    by_header = gateway.client(key).get("/v1/questions/unknown-question")
    by_bearer = httpx.get(
        f"{gateway.url}/v1/questions/unknown-question", headers={"Authorization": f"Bearer {key}"}
    )
    assert by_header.status_code == by_bearer.status_code == 404


def test_keys_created_and_revoked_with_the_cli_take_effect_on_the_running_gateway(gateway: Gateway) -> None:
    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "cli.main", "keys", *args],
            cwd=REPO, env={**gateway.env, "COLUMNS": "200"}, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout

    created = cli("create", "--name", "laptop")
    key = next(line for line in created.splitlines() if line.startswith("hs_"))
    key_id = key.split("_")[1]
    assert gateway.client(key).get("/v1/questions/x").status_code == 404
    assert "laptop" in cli("list")
    assert f"revoked key {key_id}" in cli("revoke", key_id)
    refused = gateway.client(key).get("/v1/questions/x")
    assert refused.status_code == 401
    assert refused.json()["detail"] == f"API key {key_id} was revoked"


def test_over_long_question_gets_422_naming_the_limit(gateway: Gateway) -> None:
    _, key = new_key(gateway)
    response = gateway.client(key).post("/v1/questions", json={"question": "why " * 100})
    assert response.status_code == 422
    assert response.json()["detail"] == "the question is 399 characters; the limit is 300"


def test_over_large_body_gets_413_before_auth_or_parsing(gateway: Gateway) -> None:
    _, key = new_key(gateway)
    response = gateway.client(key).post("/v1/questions", content=b"x" * 5000)
    assert response.status_code == 413
    assert "over the limit of 4096 bytes" in response.json()["detail"]


def test_rate_limit_answers_429_with_retry_after(gateway: Gateway) -> None:
    _, key = new_key(gateway)
    client = gateway.client(key)
    statuses = [client.get("/v1/questions/x") for _ in range(42)]
    refused = [r for r in statuses if r.status_code == 429]
    assert refused, "20 requests a minute were allowed, 42 were sent"
    assert 1 <= int(refused[0].headers["retry-after"]) <= 61
    assert "rate limit" in refused[0].json()["detail"]


def test_saturated_queue_answers_429_with_retry_after_then_accepts_when_drained(
    gateway: Gateway, redis_url: str
) -> None:
    """Six messages in the retrieve queue and no worker: over the bound of 5, so new questions wait."""
    _, key = new_key(gateway)
    broker = redis.Redis.from_url(redis_url)
    broker.delete("retrieve")
    broker.lpush("retrieve", *[f"stuck-{n}" for n in range(6)])
    refused = gateway.client(key).post("/v1/questions", json=QUESTION)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "7"
    assert "6 tasks already queued" in refused.json()["detail"]
    metrics = httpx.get(f"{gateway.url}/metrics").text
    assert 'hindsight_queue_depth{queue="retrieve"} 6.0' in metrics
    assert 'hindsight_http_rejections_total{reason="backpressure"}' in metrics

    broker.delete("retrieve")
    accepted = gateway.client(key).post("/v1/questions", json=QUESTION)
    assert accepted.status_code == 202
    assert broker.llen("retrieve") == 1


def test_open_gateway_on_a_network_address_refuses_to_start(redis_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env = hindsight_env(tmp_path, redis_url, free_port(), HINDSIGHT_GATEWAY_AUTH="open")
    env["HINDSIGHT_GATEWAY_HOST"] = "0.0.0.0"
    process = start_gateway(env, tmp_path / "gateway.log")
    assert process.wait(30) != 0
    assert "refusing to serve without API keys on 0.0.0.0" in (tmp_path / "gateway.log").read_text()


def test_gateway_on_a_network_address_without_configured_roots_refuses_to_start(
    redis_url: str, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    env = hindsight_env(tmp_path, redis_url, free_port())
    env["HINDSIGHT_GATEWAY_HOST"] = "0.0.0.0"
    process = start_gateway(env, tmp_path / "gateway.log")
    assert process.wait(30) != 0
    assert "refusing to serve on 0.0.0.0 without HINDSIGHT_ROOTS" in (tmp_path / "gateway.log").read_text()


def test_index_requests_outside_the_configured_roots_get_403_with_the_reason(
    redis_url: str, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    port = free_port()
    env = hindsight_env(
        tmp_path, redis_url, port, HINDSIGHT_GATEWAY_AUTH="open", HINDSIGHT_ROOTS=str(allowed)
    )
    process = start_gateway(env, tmp_path / "gateway.log")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{url}/metrics").status_code == 200, 30, "the gateway")
        for escape in ("/etc", f"{allowed}/../../etc"):
            response = httpx.post(f"{url}/v1/index", json={"root": escape})
            assert response.status_code == 403
            assert "outside the configured roots" in response.json()["detail"]
        assert httpx.post(f"{url}/v1/index", json={"root": str(allowed)}).status_code == 202
    finally:
        process.terminate()
        process.wait(10)


def test_open_gateway_on_loopback_serves_without_a_key(redis_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    env = hindsight_env(tmp_path, redis_url, port, HINDSIGHT_GATEWAY_AUTH="open")
    process = start_gateway(env, tmp_path / "gateway.log")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{url}/metrics").status_code == 200, 30, "the open gateway")
        assert httpx.get(f"{url}/v1/questions/unknown").status_code == 404
    finally:
        process.terminate()
        process.wait(10)


def test_flower_refuses_to_start_without_basic_auth_and_demands_it_when_set(redis_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    env = hindsight_env(tmp_path, redis_url, free_port(), HINDSIGHT_FLOWER_PORT=str(port))
    env["HINDSIGHT_FLOWER_ADDRESS"] = "127.0.0.1"
    command = [sys.executable, "-m", "celery", "-A", "shared.celery_app", "flower",
               "--conf=deploy/flower/flowerconfig.py"]  # fmt: skip
    refused = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "does not run without basic auth" in refused.stderr

    env["HINDSIGHT_FLOWER_BASIC_AUTH"] = "admin:s3cret"
    with (tmp_path / "flower.log").open("wb") as log:
        flower = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(lambda: httpx.get(url, auth=("admin", "s3cret")).status_code == 200, 60, "flower")
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, auth=("admin", "wrong")).status_code == 401
    finally:
        flower.terminate()
        flower.wait(15)


def test_event_stream_survives_a_stage_quieter_than_the_redis_socket_timeout(
    gateway: Gateway, redis_url: str
) -> None:
    """A search that takes 7 s emits nothing meanwhile; the stream must wait, not break at 5 s."""
    _, key = new_key(gateway)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.set(stream_kind_key("quiet-question"), "q", ex=60)  # as the gateway marks a question it accepted
    stream = EventStream("quiet-question", client, 60)
    stream.emit("search", "started", "dense, bm25, exact")

    def slow_stage() -> None:
        time.sleep(7)
        stream.emit("search", "done", "8 candidates")
        stream.emit("answer", "failed", "stopped by the test")

    writer = threading.Thread(target=slow_stage)
    writer.start()
    with gateway.client(key).stream("GET", "/v1/questions/quiet-question/events", timeout=30) as response:
        stages = [line for line in response.iter_lines() if line.startswith("event:")]
    writer.join()
    # No worker runs beside this gateway, so the stream also says so ("waiting"); what matters here is
    # that it outlives the quiet 7 s and carries every stage event.
    assert [line for line in stages if line != "event: waiting"] == [
        "event: search",
        "event: search",
        "event: answer",
    ]


def test_unknown_ids_get_404_while_an_accepted_question_is_pending_before_its_first_event(
    gateway: Gateway, redis_url: str
) -> None:
    """No worker runs here, so the accepted question has no event yet: it is pending, not unknown."""
    _, key = new_key(gateway)
    client = gateway.client(key)
    for url in ("/v1/questions/nope/events", "/v1/questions/nope", "/v1/index/nope/events", "/v1/index/nope"):
        response = client.get(url)
        assert response.status_code == 404, url
        assert "with id nope" in response.json()["detail"]

    accepted = client.post("/v1/questions", json=QUESTION).json()
    redis.Redis.from_url(redis_url).delete("retrieve")  # no worker will take it; keep the queue empty
    assert client.get(accepted["status_url"]).json()["status"] == "pending"
    with client.stream("GET", accepted["events_url"]) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")


def test_the_openai_compatible_endpoint_has_the_api_s_keys_and_limits_in_openai_s_errors(
    gateway: Gateway,
) -> None:
    """The official client's exceptions carry the gateway's own sentences."""
    _, key = new_key(gateway)
    client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=key, max_retries=0)
    too_long = [{"role": "user", "content": "why " * 100}]
    with pytest.raises(
        openai.UnprocessableEntityError, match="the question is 399 characters; the limit is 300"
    ):
        client.chat.completions.create(model="hindsight", messages=too_long)
    not_last = [{"role": "user", "content": "why?"}, {"role": "assistant", "content": "because"}]
    with pytest.raises(openai.UnprocessableEntityError, match="the last message must be the user's question"):
        client.chat.completions.create(model="hindsight", messages=not_last)
    wrong = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="hs_wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError, match="Error code: 401 - "):
        wrong.models.list()
    refused = httpx.post(f"{gateway.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401 and "missing API key" in refused.json()["detail"]
