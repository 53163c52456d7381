"""Cloudflare as users meet it: headful by default (on a virtual display when there is no desktop),
a challenge that clears by itself waited out, one that does not ended with what to do, and the same
browser and user agent for login and scrape."""

from __future__ import annotations

import shutil

import pytest

from services.scraper.checkpoint import CHECKPOINT_NAME
from services.scraper.errors import CloudflareChallenge
from shared.settings import Settings
from testing.perplexity_replay import ReplayLibrary
from tests.scraper.conftest import export_with, login_with

pytestmark = pytest.mark.browser


def test_a_challenge_that_clears_after_a_few_seconds_is_waited_out(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    library.challenge_for_s = 2.0
    settings = logged_in.replace(scrape_challenge_wait_s=15.0)

    report = export_with(settings)

    assert (report.new, report.failed) == (6, 0)
    assert [r.status for r in library.requests("/library")][:1] == [403]


def test_a_challenge_in_the_middle_of_a_run_is_waited_out_on_the_reloaded_page(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    def challenge_after_the_first_write(detail: str, _data: object) -> None:
        if detail.startswith("new:") and library.challenge_for_s is None:
            library.challenge_for_s = 1.5

    settings = logged_in.replace(scrape_challenge_wait_s=15.0)
    report = export_with(settings, progress=challenge_after_the_first_write)

    assert (report.new, report.failed) == (6, 0)
    challenged = [r for r in library.log if r.status == 403 and r.path.startswith("/rest/thread/")]
    assert len(challenged) == 1  # the API call that met the challenge, sent again once it cleared
    pages = [r.status for r in library.requests("/library")]
    assert pages[0] == 200 and 403 in pages and pages[-1] == 200


def test_a_challenge_that_does_not_clear_ends_the_run_with_what_to_do_and_keeps_the_checkpoint(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)
    checkpoint = (logged_in.export_root / CHECKPOINT_NAME).read_bytes()
    library.cloudflare = True

    with pytest.raises(CloudflareChallenge) as raised:
        export_with(logged_in)

    message = str(raised.value)
    assert "did not clear within 2s" in message and "hindsight scrape --login" in message
    assert "HINDSIGHT_SCRAPE_HEADLESS" in message and "resumes from the checkpoint" in message
    assert (logged_in.export_root / CHECKPOINT_NAME).read_bytes() == checkpoint
    assert len(list(logged_in.export_root.rglob("*.md"))) == 6


def test_login_and_scrape_present_the_same_non_headless_user_agent(
    settings: Settings, library: ReplayLibrary
) -> None:
    login_with(settings, lambda page: page.click("#login"), headless=True)
    export_with(settings)

    agents = {r.user_agent for r in library.log if r.user_agent}
    assert len(agents) == 1
    assert "Headless" not in agents.pop()


@pytest.mark.skipif(not shutil.which("Xvfb"), reason="needs Xvfb (apt-get install xvfb)")
def test_headful_by_default_runs_on_a_virtual_display_when_there_is_no_desktop(
    logged_in: Settings, library: ReplayLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    headful = logged_in.replace(scrape_headless=Settings().scraping.scrape_headless)

    report = export_with(headful)

    assert headful.scraping.scrape_headless is False
    assert (report.new, report.failed) == (6, 0)
