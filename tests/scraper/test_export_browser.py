"""The real scraper in headless Chromium against the local replay server."""

from __future__ import annotations

import json
import stat

import pytest

from services.scraper.checkpoint import CHECKPOINT_NAME
from services.scraper.errors import CloudflareChallenge, DiscoveryFailed, NotLoggedIn
from shared.settings import Settings
from testing.perplexity_replay import ReplayEntry, ReplayLibrary
from tests.scraper.conftest import export_with, front_matter, login_with, section

pytestmark = pytest.mark.browser

QUANTUM = "Physics/Quantum error correction basics (AbCdEfGhIjKlMnOpQrStUv).md"
RUST = "General/Rust borrow checker (BbCdEfGhIjKlMnOpQrStUv).md"
SCRAPER_LIST_LIMIT = 3


def exported(settings: Settings) -> dict[str, str]:
    root = settings.export_root
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*.md")}


def thread_fetches(library: ReplayLibrary) -> list[str]:
    return [r.path for r in library.log if r.path.startswith("/rest/thread/") and r.method == "GET"]


def test_first_run_exports_every_live_thread_with_front_matter_turns_and_linked_sources(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    report = export_with(logged_in)

    files = exported(logged_in)
    assert (report.discovered, report.new, report.gone, report.failed) == (7, 6, 1, 0)
    assert sorted(files) == sorted(report.written)
    assert QUANTUM in files and RUST in files
    assert not any("Deleted thread" in name for name in files)
    meta = front_matter(logged_in.export_root / QUANTUM)
    assert meta["title"] == "Quantum error correction basics"
    assert meta["uuid"] == "11111111-1111-4111-8111-111111111111"
    assert meta["space"] == "Physics"
    assert meta["url"].endswith("/search/quantum-error-correction-basics-AbCdEfGhIjKlMnOpQrStUv")
    assert meta["created"] == "2025-07-26T00:50:10.801065Z" and meta["updated"] == "2025-07-26T10:00:00Z"
    assert {"model", "mode"} <= meta.keys()
    quantum = files[QUANTUM]
    # Three turns over two cursor pages that overlap by one entry: each turn exactly once, in order.
    assert quantum.count("## ") == 3
    assert (
        quantum.index("## What is quantum") < quantum.index("## How does") < quantum.index("## What is the")
    )
    # Schematized shape: ask_text alone (not the repeated sections), each turn with its own sources.
    assert quantum.count("It protects qubits") == 1
    first = section(quantum, "What is quantum error correction?")
    assert "It protects qubits [1] using codes [2]." in first
    assert "1. [Surface codes explained](https://example.org/surface)" in first
    assert "2. [Threshold theorem](https://example.org/threshold)" in first
    third = section(quantum, "What is the threshold?")
    assert "About one percent [2], per the theorem [1]." in third
    assert "2. [Surface codes explained](https://example.org/surface)" in third
    # Plain shape (`text` steps only): answer and sources still come through.
    assert "Two mutable borrows overlap [1]." in files[RUST]
    assert "1. [The Rust Book](https://doc.rust-lang.org/book/)" in files[RUST]


def test_discovery_puts_pinned_first_dedupes_and_pages_until_an_empty_page(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)

    scraper_pages = [
        r.body["offset"]
        for r in library.requests("/rest/thread/list_ask_threads")
        if isinstance(r.body, dict) and r.body.get("limit") == SCRAPER_LIST_LIMIT
    ]
    assert scraper_pages == [0, 3, 6, 7]  # total_threads says 99; the empty page ends paging
    fetches = thread_fetches(library)
    assert fetches[0].endswith("AbCdEfGhIjKlMnOpQrStUv") and fetches[2].endswith("GbCdEfGhIjKlMnOpQrStUv")
    assert len({path for path in fetches}) == 7  # the pinned ones (also listed) are fetched once each


def test_file_names_are_portable_and_unique(logged_in: Settings) -> None:
    names = export_with(logged_in).written

    assert len(set(names)) == len(names) == 6
    for name in names:
        for part in name.split("/"):
            assert not set(part) & set('<>:"\\|?*'), part
            assert part == part.strip(" .")
            assert len(part.encode()) < 200
    assert "Cooking_Baking/Sourdough_ hydration 75%_ _best_ _ _ratio_ (DbCdEfGhIjKlMnOpQrStUv).md" in names
    same = [n for n in names if n.startswith("General/Same title")]
    assert len(same) == 2
    assert "General/_CON (GbCdEfGhIjKlMnOpQrStUv).md" in names


def test_second_run_skips_everything_and_a_changed_thread_is_rerendered_alone(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)
    before = exported(logged_in)
    mtimes = {p: (logged_in.export_root / p).stat().st_mtime_ns for p in before}
    library.log.clear()

    second = export_with(logged_in)
    assert (second.new, second.changed, second.unchanged, second.fetched) == (0, 0, 6, 0)
    assert exported(logged_in) == before

    rust = library.thread("rust-borrow-checker-BbCdEfGhIjKlMnOpQrStUv")
    assert rust is not None
    rust.entries.append(
        ReplayEntry(
            "And with RefCell?",
            "RefCell moves the check to run time [1].",
            [{"name": "std::cell", "url": "https://doc.rust-lang.org/std/cell/"}],
            created="2025-07-27T10:00:00.000000",
        )
    )
    rust.last_query_datetime = "2025-07-27T10:00:00.000000"
    library.log.clear()

    third = export_with(logged_in)
    after = exported(logged_in)
    assert (third.changed, third.new, third.unchanged, third.written) == (1, 0, 5, [RUST])
    assert thread_fetches(library) == ["/rest/thread/rust-borrow-checker-BbCdEfGhIjKlMnOpQrStUv"]
    assert "## And with RefCell?" in after[RUST]
    for path in before:
        if path != RUST:
            assert after[path] == before[path]
            assert (logged_in.export_root / path).stat().st_mtime_ns == mtimes[path]


def test_refetching_everything_rewrites_only_threads_whose_hash_changed(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)
    same = library.thread("same-title-EbCdEfGhIjKlMnOpQrStUv")
    assert same is not None
    same.entries[0].answer = "Answer one, corrected silently."  # content changes, listing does not

    report = export_with(logged_in, refetch_all=True)

    assert (report.fetched, report.changed, report.unchanged) == (6, 1, 5)
    assert report.written == ["General/Same title (EbCdEfGhIjKlMnOpQrStUv).md"]
    checkpoint = json.loads((logged_in.export_root / CHECKPOINT_NAME).read_text())
    assert set(checkpoint["threads"]) == {t.uuid for t in library.threads if not t.gone}


def test_rate_limits_and_server_errors_are_retried_honouring_retry_after(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    path = "/rest/thread/rust-borrow-checker-BbCdEfGhIjKlMnOpQrStUv"
    library.faults[path] = [429, 502, 200]  # rate limit, gateway error, HTML interstitial, then data
    library.faults["/rest/thread/list_ask_threads@3"] = [429]

    report = export_with(logged_in)

    assert (report.new, report.failed) == (6, 0)
    attempts = library.requests(path)
    assert [r.status for r in attempts] == [429, 502, 200, 200]
    assert attempts[1].at - attempts[0].at >= 0.95  # Retry-After: 1
    pages = [r for r in library.requests("/rest/thread/list_ask_threads") if r.body.get("offset") == 3]
    assert [r.status for r in pages] == [429, 200]


def test_a_thread_that_keeps_failing_is_reported_and_skipped(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    path = "/rest/thread/sourdough-hydration-DbCdEfGhIjKlMnOpQrStUv"
    library.faults[path] = [503] * 10

    report = export_with(logged_in)

    assert (report.new, report.failed, report.gone) == (5, 1, 1)
    assert len(library.requests(path)) == logged_in.scraping.scrape_max_attempts
    assert any("Sourdough" in line and "503" in line for line in report.failures)
    assert not any("Sourdough" in name for name in exported(logged_in))


def test_expired_login_stops_with_a_relogin_message_and_writes_nothing(
    settings: Settings, library: ReplayLibrary
) -> None:
    from tests.scraper.conftest import write_state

    write_state(settings.perplexity_state_path, "token-expired")

    with pytest.raises(NotLoggedIn, match=r"expired.*hindsight scrape --login"):
        export_with(settings)
    assert not settings.export_root.exists() or not any(settings.export_root.iterdir())


def test_missing_login_state_says_how_to_log_in(settings: Settings) -> None:
    with pytest.raises(NotLoggedIn, match=r"No saved Perplexity login.*--login"):
        export_with(settings)


def test_401_mid_run_aborts_but_keeps_the_checkpoint_of_finished_threads(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    library.faults["/rest/thread/same-title-FbCdEfGhIjKlMnOpQrStUv"] = [401]

    with pytest.raises(NotLoggedIn, match="401"):
        export_with(logged_in)

    checkpoint = json.loads((logged_in.export_root / CHECKPOINT_NAME).read_text())
    assert len(checkpoint["threads"]) == 5
    resumed = export_with(logged_in)
    assert (resumed.new, resumed.unchanged, resumed.fetched) == (1, 5, 1)


def test_a_lasting_cloudflare_challenge_stops_before_any_api_call_with_an_actionable_message(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    library.cloudflare = True

    with pytest.raises(CloudflareChallenge, match=r"did not clear.*hindsight scrape --login"):
        export_with(logged_in)
    assert not [r.path for r in library.log if r.path.startswith(("/rest/", "/api/"))]


def test_an_empty_library_listing_is_an_error_not_a_silent_empty_export(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    library.threads.clear()

    with pytest.raises(DiscoveryFailed, match=r"no threads after 3 attempts.*--login"):
        export_with(logged_in)
    offsets = [
        r.body["offset"] for r in library.requests("/rest/thread/list_ask_threads") if r.body["limit"] == 3
    ]
    assert offsets == [0, 0, 0]


def test_interactive_login_saves_a_state_that_later_runs_reuse(
    settings: Settings, library: ReplayLibrary
) -> None:
    """The user's clicks in the login window are played by ``on_waiting`` (headless here)."""
    user = login_with(settings, lambda page: page.click("#login"), headless=True)

    state_path = settings.perplexity_state_path
    assert user["user"]["email"] == "tester@example.com"
    assert stat.S_IMODE(state_path.stat().st_mode) == 0o600
    assert [c["name"] for c in json.loads(state_path.read_text())["cookies"]] == [
        "__Secure-next-auth.session-token"
    ]
    assert export_with(settings).new == 6
