"""Scrape → index → answer with every part real: the replay server in Chromium, Redis, the workers
and the gateway started as ``hindsight up`` starts them (the scrape worker among them).

``POST /v1/scrape`` exports through the scrape worker and indexes through the index job, then a
question cites the scraped thread; ``hindsight scrape`` (the CLI action) runs the same job through the
gateway and shows the indexing of what it exported.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cli.actions import library as library_action
from cli.actions import scrape as scrape_action
from cli.client import GatewayClient
from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, wait_until
from shared.contracts import Answer, SearchMode, SearchRequest
from shared.settings import Settings, get_settings
from testing.perplexity_replay import ReplayEntry, ReplayLibrary, ReplayServer, ReplayThread, Shape
from testing.processes import free_port
from tests.conftest import require_embedder
from tests.scraper.conftest import CHROMIUM, default_threads, write_state

pytestmark = [pytest.mark.integration, pytest.mark.browser]

PLANTED_FACT = "teal-otter-97"
FOLLOW_UP_FACT = "amber-lynx-42"
HERON = ReplayThread(
    uuid="99999999-9999-4999-8999-999999999999",
    slug="project-heron-launch-code-HbCdEfGhIjKlMnOpQrStUv",
    title="Project Heron launch code",
    space="Projects",
    last_query_datetime="2025-07-27T10:00:00.000000",
    entries=[
        ReplayEntry(
            "What is the launch code for Project Heron?",
            f"The launch code for Project Heron is {PLANTED_FACT}, set at the kickoff [1].",
            [{"name": "Heron kickoff notes", "url": "https://example.org/heron"}],
            shape=Shape.BLOCKS_ONLY,
        )
    ],
)


@dataclass
class Stack:
    client: GatewayClient
    api_key: str | None
    settings: Settings
    replay: ReplayServer


@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("data")
    library = ReplayLibrary(threads=[HERON, *default_threads()], total_threads=99)
    with ReplayServer(library) as replay, pytest.MonkeyPatch.context() as env:
        for key, value in {
            "HINDSIGHT_PERPLEXITY_BASE_URL": replay.base_url,
            "HINDSIGHT_CHROMIUM_PATH": CHROMIUM,
            "HINDSIGHT_SCRAPE_HEADLESS": "true",
            "HINDSIGHT_SCRAPE_PAGE_DELAY_S": "0",
            "HINDSIGHT_SCRAPE_PAGE_JITTER_S": "0",
            "HINDSIGHT_SCRAPE_THREAD_DELAY_S": "0",
            "HINDSIGHT_SCRAPE_THREAD_JITTER_S": "0",
        }.items():
            env.setenv(key, value)
        port = free_port()
        settings = Settings(
            data_dir=data_dir,
            models_dir=require_embedder(),
            redis_url=redis_url,
            gateway_port=port,
            gateway_url=f"http://127.0.0.1:{port}",
        )
        write_state(settings.perplexity_state_path, "token-ok")
        ensure_local_key(settings)
        local = LocalStack(settings)
        local.up()
        client = GatewayClient(settings.gateway.gateway_url, client_key(settings), timeout_s=60)

        def every_worker_up() -> bool:
            try:
                health = client.health()
            except httpx.HTTPError:
                return False
            return health["status"] == "ok" and bool(health["queues"].get("scrape"))  # type: ignore[union-attr]

        try:
            wait_until(every_worker_up, 120, "workers, the scrape worker and the gateway")
            yield Stack(client, client_key(settings), settings, replay)
        finally:
            local.down()


def post_scrape(stack: Stack) -> httpx.Response:
    headers = {"X-API-Key": stack.api_key} if stack.api_key else {}
    return httpx.post(f"{stack.settings.gateway.gateway_url}/v1/scrape", headers=headers, json={}, timeout=30)


def test_post_scrape_exports_and_indexes_then_a_question_cites_the_scraped_thread(stack: Stack) -> None:
    reply = post_scrape(stack)
    assert reply.status_code == 202, reply.text
    job_id = reply.json()["job_id"]
    assert post_scrape(stack).status_code == 409  # one run at a time

    events = list(stack.client.follow(f"/v1/scrape/{job_id}/events"))

    scrape_done = next(e for e in events if e.stage == "scrape" and e.status == "done")
    assert scrape_done.data["new"] == 7 and scrape_done.data["index_queued"] is True
    assert (events[-1].stage, events[-1].status) == ("index", "done"), events[-1].detail
    again = post_scrape(stack)
    assert again.status_code == 202  # the lock was released: the next run may start
    list(stack.client.follow(f"/v1/scrape/{again.json()['job_id']}/events"))  # ended: the next may run

    question_id = stack.client.ask("What is the launch code for Project Heron?")
    list(stack.client.question_events(question_id))
    answer = stack.client.answer(question_id)
    assert isinstance(answer, Answer)
    cited = [c for c in answer.citations if PLANTED_FACT in c.quote]
    assert cited, answer.markdown
    assert Path(cited[0].source_uri).name == "Project Heron launch code (HbCdEfGhIjKlMnOpQrStUv).md"


def test_the_scrape_command_runs_the_job_through_the_gateway_and_shows_its_indexing(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HINDSIGHT_DATA_DIR", str(stack.settings.data_dir))
    monkeypatch.setenv("HINDSIGHT_GATEWAY_URL", stack.settings.gateway.gateway_url)
    monkeypatch.setenv("HINDSIGHT_REDIS_URL", stack.settings.redis_url)
    get_settings.cache_clear()
    heron = stack.replay.library.thread(HERON.slug)
    assert heron is not None
    heron.entries.append(
        ReplayEntry("Who set it?", f"The flight director set {FOLLOW_UP_FACT} as the backup code.")
    )
    heron.last_query_datetime = "2025-07-28T10:00:00.000000"  # the listing moved: the thread is fetched
    try:
        report = scrape_action.scrape(get_settings())
    finally:
        get_settings.cache_clear()

    assert report.changed == 1
    said = " ".join(capsys.readouterr().out.split())
    assert f"threads → {stack.settings.export_root}: 0 new, 1 changed" in said
    assert "scanned 7: 0 new, 1 changed" in said
    request = SearchRequest(query=FOLLOW_UP_FACT, mode=SearchMode.EXACT, limit=5)
    found = stack.client.search(request, timeout_s=60).candidates
    assert [Path(c.chunk.source_uri).name for c in found][:1] == [
        "Project Heron launch code (HbCdEfGhIjKlMnOpQrStUv).md"
    ]


def test_library_check_counts_the_scraped_threads_and_finds_each_by_its_first_question(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HINDSIGHT_DATA_DIR", str(stack.settings.data_dir))
    monkeypatch.setenv("HINDSIGHT_GATEWAY_URL", stack.settings.gateway.gateway_url)
    monkeypatch.setenv("HINDSIGHT_REDIS_URL", stack.settings.redis_url)
    get_settings.cache_clear()
    try:
        settings = get_settings()
        scrape_action.scrape(settings)
        check, items = library_action.library_check(
            settings, library_action.gateway_search(settings.export_root)
        )
    finally:
        get_settings.cache_clear()

    said = " ".join(capsys.readouterr().out.split())
    assert check.by_origin == {"scraped": 7} and check.unreadable == [] and check.turn_mismatches == []
    assert len(items) == 7 and library_action.recall_and_mrr(items)[0] == 1.0
    assert "7 threads in" in said and "turns as the site reported them: 7 of 7" in said
    assert "Recall@5 1.00" in said
