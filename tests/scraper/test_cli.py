"""The Typer sub-apps, run through Typer's test runner on documented-format files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.actions import scrape as scrape_action
from cli.main import app, import_app, scrape_app
from shared.contracts import Event, ScanReport
from shared.settings import Settings, get_settings
from testing.processes import free_port
from tests.scraper.conftest import CHROMIUM, data_export


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HINDSIGHT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HINDSIGHT_PERPLEXITY_STATE", str(tmp_path / "nowhere" / "state.json"))
    monkeypatch.setenv("HINDSIGHT_CHROMIUM_PATH", str(tmp_path / "no-chromium"))
    # No gateway listens there: a stack the developer left running on the default port is not this test's.
    monkeypatch.setenv("HINDSIGHT_GATEWAY_URL", f"http://127.0.0.1:{free_port()}")
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_import_perplexity_export_reports_counts_and_writes_files(env: Path) -> None:
    source = data_export(env / "export.json")

    result = CliRunner().invoke(
        import_app, ["perplexity-export", str(source), "--export-dir", str(env / "out")]
    )

    assert result.exit_code == 0, result.output
    assert "2 new" in result.output
    assert len(list((env / "out").rglob("*.md"))) == 2


def test_import_of_a_wrong_file_fails_with_a_clear_message(env: Path) -> None:
    (env / "bad.json").write_text('{"something": "else"}')

    result = CliRunner().invoke(import_app, ["perplexity-export", str(env / "bad.json")])

    assert result.exit_code == 1
    assert "no `conversations` list" in result.output


def test_scrape_without_a_usable_browser_says_what_to_install(env: Path) -> None:
    result = CliRunner().invoke(scrape_app, [])

    assert result.exit_code == 1
    assert "Chromium did not start" in result.output


def test_scrape_refuses_the_options_the_scrape_worker_takes_from_its_own_settings(env: Path) -> None:
    headless = CliRunner().invoke(scrape_app, ["--headless"])
    elsewhere = CliRunner().invoke(scrape_app, ["--export-dir", str(env / "out")])

    assert headless.exit_code == elsewhere.exit_code == 2
    assert "set HINDSIGHT_SCRAPE_HEADLESS=true and restart" in " ".join(headless.output.split())
    assert "set HINDSIGHT_EXPORT_DIR and restart" in " ".join(elsewhere.output.split())
    assert not (env / "out").exists()


def test_logging_in_without_a_desktop_says_where_to_log_in_instead(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("HINDSIGHT_CHROMIUM_PATH", CHROMIUM)
    get_settings.cache_clear()

    result = CliRunner().invoke(scrape_app, ["--login"])

    assert result.exit_code == 1
    assert "needs a browser window you can see" in result.output
    assert str(env / "nowhere" / "state.json") in result.output


def test_library_check_counts_threads_names_a_broken_file_and_says_when_search_cannot_run(env: Path) -> None:
    out = env / "out"
    CliRunner().invoke(
        import_app, ["perplexity-export", str(data_export(env / "export.json")), "--export-dir", str(out)]
    )
    (out / "General" / "Broken.md").write_text("no front matter here\n")

    result = CliRunner().invoke(app, ["library", "check", "--export-dir", str(out)])

    said = " ".join(result.output.split())
    assert result.exit_code == 2
    assert f"2 threads in {out}: 2 imported" in said
    assert "turns as the site reported them: 2 of 2" in said
    assert (
        "files that did not read as a thread: 1" in said
        and "General/Broken.md: no Perplexity front matter" in said
    )
    assert "Hindsight is not running" in said or "hindsight up" in said


class RecordedGateway:
    """A stand-in for the gateway client at the CLI's edge: it replays one scrape job's stream as the
    gateway sent it when the index job the export queued ended before the export's own ``done``."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def scrape(self, refetch_all: bool = False) -> str:
        return "job-1"

    def scrape_events(self, job_id: str) -> Iterator[Event]:
        return iter(self.events)


def test_the_scrape_command_prints_the_export_and_its_indexing_when_the_index_job_ends_first(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=env / "data")
    settings.perplexity_state_path.parent.mkdir(parents=True)
    settings.perplexity_state_path.write_text("{}")
    counts = {"discovered": 2, "fetched": 2, "new": 0, "changed": 1, "unchanged": 1, "gone": 0, "failed": 0}
    indexed = ScanReport(job_id="job-1", root=str(settings.export_root), scanned=2, unchanged=2)
    stream = [
        Event(stream_id="job-1", stage="scrape", status="started"),
        Event(stream_id="job-1", stage="scan", status="started"),
        Event(stream_id="job-1", stage="index", status="done", data=indexed.to_payload()),
        Event(stream_id="job-1", stage="scrape", status="done", data={**counts, "index_queued": True}),
    ]

    report = scrape_action.scrape(settings, client=RecordedGateway(stream))  # type: ignore[arg-type]

    assert (report.discovered, report.changed) == (2, 1)
    said = " ".join(capsys.readouterr().out.split())
    assert f"2 threads → {settings.export_root}: 0 new, 1 changed" in said and "scanned 2:" in said
