"""One real question through the real stack: ``hindsight up`` (Redis, a Celery worker per queue, the
gateway as processes), the ONNX embedder, real HTTP and server-sent events, real Chromium.

No LLM server can run here, so the synthesizer runs in its extractive mode (the local default).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from shared.contracts import Event
from testing.processes import free_port
from tests.gateway.conftest import REPO, hindsight_env

pytestmark = pytest.mark.integration
ARTIFACTS = REPO / "test-artifacts"
QUESTION = "How does cross-encoder reranking score passages?"


@dataclass
class Stack:
    url: str
    key: str
    env: dict[str, str]
    data_dir: Path
    samples: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-Key": self.key}, timeout=30)


def cli(env: dict[str, str], *args: str, timeout_s: float = 180) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def sse_events(client: httpx.Client, path: str, last_event_id: str | None = None) -> list[tuple[str, Event]]:
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    events, entry_id = [], ""
    with client.stream("GET", path, headers=headers, timeout=httpx.Timeout(30, read=120)) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("id:"):
                entry_id = line[3:].strip()
            elif line.startswith("data:"):
                events.append((entry_id, Event.model_validate_json(line[5:].strip())))
    return events


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """``hindsight up`` on its own ports and data folder; the research samples indexed over HTTP."""
    data_dir = tmp_path_factory.mktemp("stack")
    samples = tmp_path_factory.mktemp("samples") / "samples"
    shutil.copytree(REPO / "samples", samples)
    port = free_port()
    env = hindsight_env(
        data_dir, f"redis://127.0.0.1:{free_port()}/0", port, COLUMNS="200", HINDSIGHT_ROOTS=str(samples)
    )
    try:
        output = cli(env, "up")
        assert "requires an API key" in output
        key = (data_dir / "cli.key").read_text().strip()
        running = Stack(f"http://127.0.0.1:{port}", key, env, data_dir, samples)
        with running.client() as client:
            job = client.post("/v1/index", json={"root": str(samples / "research")}).json()
            done = sse_events(client, job["events_url"])[-1][1]
            assert done.stage == "index" and done.data["new"] == 2, done
        yield running
    finally:
        cli(env, "down")


def test_stage_events_stream_in_pipeline_order_and_end_with_the_answer(stack: Stack) -> None:
    with stack.client() as client:
        accepted = client.post("/v1/questions", json={"question": QUESTION})
        assert accepted.status_code == 202
        events = sse_events(client, accepted.json()["events_url"])

    steps = [(e.stage, e.status) for _, e in events]
    expected_order = [
        ("plan", "started"), ("plan", "done"), ("search", "started"), ("search", "done"),
        ("rerank", "started"), ("map", "started"), ("map", "progress"), ("reduce", "started"),
        ("reduce", "done"), ("answer", "done"),
    ]  # fmt: skip
    positions = [next(i for i, step in enumerate(steps) if step == wanted) for wanted in expected_order]
    assert positions == sorted(positions), steps
    assert steps[-1] == ("answer", "done")
    rerank_end = next(e for _, e in events if e.stage == "rerank" and e.status in ("done", "skipped"))
    assert rerank_end.data["received"] >= rerank_end.data["kept"] > 0
    ids = [entry_id for entry_id, _ in events]
    assert ids == sorted(ids, key=lambda i: tuple(map(int, i.split("-"))))
    answer = events[-1][1].data["answer"]
    assert answer["citations"], answer


def test_event_stream_resumes_after_last_event_id(stack: Stack) -> None:
    with stack.client() as client:
        accepted = client.post("/v1/questions", json={"question": QUESTION}).json()
        first = sse_events(client, accepted["events_url"])
        plan_done = next(i for i, (_, e) in enumerate(first) if (e.stage, e.status) == ("plan", "done"))
        resumed = sse_events(client, accepted["events_url"], last_event_id=first[plan_done][0])
    assert [entry_id for entry_id, _ in resumed] == [entry_id for entry_id, _ in first[plan_done + 1 :]]


def test_citation_evidence_highlights_the_cited_span_of_its_source_file(stack: Stack) -> None:
    with stack.client() as client:
        accepted = client.post("/v1/questions", json={"question": QUESTION}).json()
        answer = sse_events(client, accepted["events_url"])[-1][1].data["answer"]
        evidence = client.get(f"/v1/questions/{accepted['id']}/citations/1").json()
        missing = client.get(f"/v1/questions/{accepted['id']}/citations/99")
    citation = answer["citations"][0]
    source = Path(citation["source_uri"]).read_text()
    assert evidence["located"] is True
    assert evidence["quote"] == citation["quote"]
    assert evidence["before"] + evidence["quote"] + evidence["after"] in source
    assert (
        source[citation["char_start"] - len(evidence["before"]) : citation["char_start"]]
        == evidence["before"]
    )
    assert evidence["line"] == citation["line"] == source.count("\n", 0, citation["char_start"]) + 1
    assert missing.status_code == 404


def test_metrics_report_stage_latencies_and_questions_from_the_event_streams(stack: Stack) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        metrics = httpx.get(f"{stack.url}/metrics").text
        if 'hindsight_questions_total{status="done"}' in metrics:
            break
        time.sleep(0.3)
    for stage in ("plan", "search", "rerank", "map", "reduce", "scan"):
        assert f'hindsight_stage_latency_seconds_count{{stage="{stage}"}}' in metrics, stage
    assert "hindsight_documents_indexed_total 2.0" in metrics
    assert 'hindsight_queue_depth{queue="retrieve"} 0.0' in metrics


def test_every_service_logs_json_lines_that_carry_the_question_id(stack: Stack) -> None:
    with stack.client() as client:
        accepted = client.post("/v1/questions", json={"question": QUESTION}).json()
        sse_events(client, accepted["events_url"])
    question_id = accepted["id"]
    time.sleep(0.5)
    services_seen = set()
    for log in (stack.data_dir / "run").glob("*.log"):
        for line in log.read_text().splitlines():
            if question_id not in line or not line.startswith("{"):
                continue
            record = json.loads(line)
            assert record["question_id"] == question_id, (log.name, line[:300])
            services_seen.add(record["service"])
    assert {"gateway", "retriever", "reranker", "mapper", "reducer"} <= services_seen


@pytest.mark.browser
def test_web_page_indexes_asks_streams_stages_and_opens_cited_evidence(stack: Stack) -> None:
    """Headless Debian Chromium drives the page: index a folder, ask, click a citation."""
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    chromium_args = [
        "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run",
    ]  # fmt: skip
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), headless=True, args=chromium_args
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{stack.url}/#key={stack.key}")
        expect(page.locator("#api-key")).to_have_value(stack.key)
        assert "key=" not in page.url

        page.fill("#index-root", str(stack.samples / "notes"))
        page.click("#index-start")
        expect(page.locator("#index-status")).to_contain_text("indexed", timeout=60_000)
        progress = page.locator("#index-progress")
        assert progress.evaluate("p => p.value === p.max && p.max === 2")

        page.fill("#question", "What is my sourdough starter called?")
        page.click("#ask")
        expect(page.locator("#answer a.cite").first).to_be_visible(timeout=60_000)
        stages = page.locator("#stages li").evaluate_all("items => items.map(i => i.dataset.stage)")
        first_seen = list(dict.fromkeys(stages))
        assert first_seen == ["plan", "search", "rerank", "map", "reduce"], stages
        expect(page.locator("#stages li[data-stage=rerank] .extra")).to_contain_text("→")
        expect(page.locator("#verification")).to_contain_text("quotes found in their files")
        expect(page.locator("#relevance")).to_contain_text("How well it answers")

        citation = page.locator("#answer a.cite").first
        number = citation.get_attribute("data-n")
        citation.click()
        expect(page.locator("#evidence-number")).to_have_text(f"[{number}]")
        mark = page.locator("#evidence mark")
        expect(mark).to_be_visible()
        assert mark.inner_text().strip()
        page.screenshot(path=str(ARTIFACTS / "web-page.png"), full_page=True)
        browser.close()
