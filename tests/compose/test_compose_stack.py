"""The embedded compose stack for real: build the images, start it on loopback, index ``samples/``, ask
over HTTP for a cited answer with evidence context, check Flower's auth, scale the reranker and the
mapper to two and see both copies counted, then ``down -v``.

Skips only when no Docker daemon can run here (``.ci/run`` starts one with the shared helper where the
machine allows). The build times, image sizes and start-up figures go to
``test-artifacts/compose-smoke.json`` and are printed by ``.ci/run``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
import yaml

from tests.compose.deployment import EMBEDDED, compose_services
from tests.compose.docker_stack import Stack, build_image, daemon_problem, image_mb, run_in_image, wait_for
from tests.conftest import REPO

QUESTION = "What is my sourdough starter called and how often is it fed?"
# What the scraper does first: Playwright's driver starts Debian's Chromium with a window.
HEADFUL_CHROMIUM = """
import os
from playwright.sync_api import sync_playwright
with sync_playwright() as playwright:
    browser = playwright.chromium.launch(
        executable_path=os.environ["HINDSIGHT_CHROMIUM_PATH"], headless=False,
        args=["--disable-background-networking", "--disable-gpu"],
    )
    page = browser.new_page()
    page.set_content("<title>rendered</title>")
    print(os.environ["DISPLAY"], page.title())
"""
FIGURES = REPO / "test-artifacts" / "compose-smoke.json"

# A cold build of the images runs in the first test's setup: longer than the suite's per-test limit.
pytestmark = [pytest.mark.compose, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def figures() -> Iterator[dict]:
    found: dict = {}
    yield found
    FIGURES.parent.mkdir(exist_ok=True)
    FIGURES.write_text(json.dumps(found, indent=2))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, figures: dict) -> Iterator[Stack]:
    if problem := daemon_problem():
        pytest.skip(f"no Docker stack can run here: {problem}")
    targets = sorted({s.target for s in compose_services("embedded").values()})
    figures["build_s"] = {target: build_image(target) for target in targets}
    figures["image_mb"] = {target: image_mb(target) for target in targets}
    running = Stack(tmp_path_factory.mktemp("compose"))
    running.write()
    started = time.monotonic()
    try:
        running.compose("up", "-d", "--no-build")
        wait_for("the gateway's /healthz", running.live, timeout_s=300)
        running.create_key()
        wait_for("/v1/health ok", running.health, timeout_s=300)
        figures["up_to_healthy_s"] = round(time.monotonic() - started, 1)
        yield running
    finally:
        logs = running.compose("logs", "--no-color", "--tail", "40", check=False).stdout
        (running.folder / "compose.log").write_text(logs)
        running.compose("down", "-v", "--remove-orphans", check=False)


@pytest.fixture(scope="module")
def api(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.gateway, headers={"X-API-Key": stack.key}, timeout=30) as client:
        yield client


def test_indexing_the_library_then_asking_gives_a_cited_answer_with_evidence_context(
    api: httpx.Client, figures: dict
) -> None:
    job = api.post("/v1/index", json={"root": "/library"})
    assert job.status_code == 202, job.text
    status_url = f"/v1/index/{job.json()['job_id']}"

    def indexed() -> dict | None:
        status = api.get(status_url).json()
        return status if status["status"] == "done" else None

    report = wait_for("indexing /library", indexed, timeout_s=300)["report"]
    assert report["new"] >= 4 and report["failed"] == 0, report

    started = time.monotonic()
    accepted = api.post("/v1/questions", json={"question": QUESTION})
    assert accepted.status_code == 202, accepted.text
    question_url = accepted.json()["status_url"]

    def answered() -> dict | None:
        status = api.get(question_url).json()
        return status if status["status"] != "pending" else None

    status = wait_for("the answer", answered, timeout_s=180, every_s=0.5)
    figures["first_answer_s"] = round(time.monotonic() - started, 1)
    assert status["status"] == "done", status
    answer = status["answer"]
    assert "Clint" in answer["markdown"] and answer["citations"], answer
    cited = answer["citations"][0]
    assert cited["source_uri"].startswith("/library/"), cited
    evidence = api.get(f"{question_url}/citations/{cited['number']}")
    assert evidence.status_code == 200, evidence.text
    context = evidence.json()
    assert context["quote"] == cited["quote"] and (context["before"] or context["after"]), context


def test_flower_refuses_without_its_credentials_and_answers_with_them(stack: Stack) -> None:
    user, password = stack.flower_auth.split(":", 1)
    assert httpx.get(f"{stack.flower}/", timeout=10).status_code == 401
    assert httpx.get(f"{stack.flower}/", auth=(user, password), timeout=10).status_code == 200


def test_scaled_reranker_and_mapper_copies_are_each_counted(stack: Stack, figures: dict) -> None:
    started = time.monotonic()
    stack.compose("up", "-d", "--no-build", "--no-recreate", "--scale", "reranker=2", "--scale", "mapper=2")

    def both_counted() -> dict | None:
        health = stack.health()
        queues = health["queues"] if health else {}
        return queues if queues.get("rerank") == 2 and queues.get("map") == 2 else None

    queues = wait_for("two rerankers and two mappers on /v1/health", both_counted, timeout_s=240)
    figures["scale_to_counted_s"] = round(time.monotonic() - started, 1)
    assert queues["retrieve"] == 1 and queues["reduce"] == 1, queues
    # Each copy's compose healthcheck pings its own node, so Docker can tell a dead copy apart.
    healthcheck = yaml.safe_load(EMBEDDED.read_text())["services"]["reranker"]["healthcheck"]["test"][-1]
    for index in ("1", "2"):
        check = stack.compose(
            "exec", "-T", "--index", index, "reranker", "sh", "-c", healthcheck.replace("$$", "$")
        )
        assert "pong" in check.stdout, check.stdout


def test_the_scraper_image_runs_a_headful_chromium_on_its_virtual_screen(stack: Stack) -> None:
    result = run_in_image("scraper", "python", "-c", HEADFUL_CHROMIUM)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [":99", "rendered"]
