"""``/v1/scrape`` on a real gateway process and a real scrape worker, against the replay server:
auth, no worker → 503, one run at a time, and the events of the run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from cli.actions import scrape as scrape_action
from cli.client import GatewayClient
from services.scraper import ScraperError
from services.scraper.imports import threads_from_data_export, write_threads
from shared.api_keys import KeyFile
from shared.contracts import Event, LibraryCheck
from shared.events import EventStream
from shared.redis_keys import SCRAPE_LOCK_KEY
from shared.settings import Settings
from shared.worker import Launch
from testing.perplexity_replay import ReplayServer
from testing.processes import free_port, start_worker, wait_for
from tests.gateway.conftest import Gateway, hindsight_env, running_gateway
from tests.scraper.conftest import CHROMIUM, data_export, write_state

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture
def gateway(redis_url: str, replay: ReplayServer, tmp_path: Path) -> Iterator[Gateway]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    write_state(data_dir / "perplexity-state.json", "token-ok")
    port = free_port()
    env = hindsight_env(
        data_dir,
        redis_url,
        port,
        HINDSIGHT_PERPLEXITY_BASE_URL=replay.base_url,
        HINDSIGHT_CHROMIUM_PATH=CHROMIUM,
        HINDSIGHT_SCRAPE_HEADLESS="true",
        HINDSIGHT_SCRAPE_LIST_PAGE_SIZE="3",
        HINDSIGHT_SCRAPE_PAGE_DELAY_S="0",
        HINDSIGHT_SCRAPE_PAGE_JITTER_S="0",
        HINDSIGHT_SCRAPE_THREAD_DELAY_S="0",
        HINDSIGHT_SCRAPE_THREAD_JITTER_S="0",
    )
    with running_gateway(env, data_dir) as running:
        yield running


@pytest.fixture
def scrape_worker(gateway: Gateway, tmp_path: Path) -> Iterator[None]:
    process = start_worker("scraper", Launch(loglevel="WARNING"), gateway.env, tmp_path / "scraper.log")
    yield
    process.terminate()
    process.wait(20)


def key_for(gateway: Gateway) -> str:
    return KeyFile(gateway.data_dir / "api_keys.json").create("scrape-test")[1]


def test_scraping_needs_a_key(gateway: Gateway) -> None:
    assert gateway.client().post("/v1/scrape", json={}).status_code == 401


def test_without_a_scrape_worker_the_request_is_refused_with_how_to_start_one(gateway: Gateway) -> None:
    reply = gateway.client(key_for(gateway)).post("/v1/scrape", json={})

    assert reply.status_code == 503
    assert "hindsight up" in reply.json()["detail"]


def scrape_done(store: redis.Redis, job_id: str) -> Event | None:
    events = [e for _, e in EventStream(job_id, store).read()]
    return next((e for e in events if e.stage == "scrape" and e.status in ("done", "failed")), None)


def test_one_run_at_a_time_and_a_run_that_changed_nothing_ends_its_stream_after_the_export(
    gateway: Gateway, scrape_worker: None, redis_url: str
) -> None:
    client = gateway.client(key_for(gateway))
    store = redis.Redis.from_url(redis_url, decode_responses=True)
    wait_for(lambda: client.post("/v1/scrape", json={}).status_code == 202, 60, "a live scrape worker")
    first = store.get(SCRAPE_LOCK_KEY)
    assert first is not None

    assert client.post("/v1/scrape", json={}).status_code == 409
    wait_for(lambda: scrape_done(store, first) is not None, 120, "the first export")
    done = scrape_done(store, first)
    assert done is not None and done.status == "done"
    assert done.data["new"] == 6 and done.data["index_queued"] is True
    wait_for(lambda: store.get(SCRAPE_LOCK_KEY) is None, 10, "the lock's release")

    second = client.post("/v1/scrape", json={}).json()["job_id"]
    with client.stream("GET", f"/v1/scrape/{second}/events", timeout=120) as stream:
        names = [line for line in stream.iter_lines() if line.startswith("event:")]

    assert names[0] == "event: scrape" and names[-1] == "event: scrape"
    last = scrape_done(store, second)
    assert last is not None and last.data["unchanged"] == 6 and last.data["index_queued"] is False
    assert client.get("/v1/scrape/unknown/events").status_code == 404


def test_without_a_scrape_worker_the_library_check_says_how_to_start_one(gateway: Gateway) -> None:
    reply = gateway.client(key_for(gateway)).get("/v1/library/perplexity")

    assert reply.status_code == 503 and "hindsight up" in reply.json()["detail"]


def test_the_library_check_route_reads_the_export_folder_back_through_the_scrape_worker(
    gateway: Gateway, scrape_worker: None, tmp_path: Path
) -> None:
    export_dir = gateway.data_dir / "exports"
    source = data_export(tmp_path / "export.json")
    write_threads(threads_from_data_export(source, "https://www.perplexity.ai", 1_000_000), export_dir)
    (export_dir / "General" / "Broken.md").write_text("no front matter\n")
    client = gateway.client(key_for(gateway))

    wait_for(lambda: client.get("/v1/library/perplexity").status_code == 200, 60, "a live scrape worker")
    check = LibraryCheck.model_validate(client.get("/v1/library/perplexity").json())

    assert check.by_origin == {"imported": 2} and check.turn_mismatches == []
    assert [(t.path, t.problem) for t in check.unreadable] == [
        ("General/Broken.md", "no Perplexity front matter (`source: perplexity`)")
    ]


def test_the_scrape_command_runs_the_job_through_the_gateway_and_prints_the_exports_counts(
    gateway: Gateway, scrape_worker: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """``hindsight scrape`` (the CLI action, not waiting for the indexing: no index worker runs here)."""
    client = GatewayClient(gateway.url, key_for(gateway), timeout_s=60)
    wait_for(lambda: gateway.client(key_for(gateway)).get("/v1/library/perplexity").status_code == 200, 60,
             "a live scrape worker")  # fmt: skip
    settings = Settings(data_dir=gateway.data_dir)

    report = scrape_action.scrape(settings, index=False, client=client)

    assert (report.discovered, report.new, report.gone, report.failed) == (7, 6, 1, 0)
    said = " ".join(capsys.readouterr().out.split())
    assert f"7 threads → {settings.export_root}: 6 new, 0 changed, 0 unchanged, 1 gone, 0 failed" in said
    assert len(list(settings.export_root.rglob("*.md"))) == 6


def test_a_failed_scrape_job_reaches_the_command_as_the_workers_sentence(
    gateway: Gateway, scrape_worker: None
) -> None:
    write_state(gateway.data_dir / "perplexity-state.json", "token-expired")
    client = GatewayClient(gateway.url, key_for(gateway), timeout_s=60)
    wait_for(lambda: gateway.client(key_for(gateway)).get("/v1/library/perplexity").status_code == 200, 60,
             "a live scrape worker")  # fmt: skip

    with pytest.raises(ScraperError, match="hindsight scrape --login"):
        scrape_action.scrape(Settings(data_dir=gateway.data_dir), client=client)
