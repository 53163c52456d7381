"""The shapes the real site serves and the friendlier replay fixtures once lacked, each exported by
the real scraper in Chromium from the replay server: one test per shape, named after what it proves.
"""

from __future__ import annotations

import logging

import pytest

from services.scraper.fetch import BLOCK_USE_CASES
from shared.settings import Settings
from testing.perplexity_replay import ReplayEntry, ReplayLibrary, ReplayThread, Shape
from tests.scraper.conftest import export_with

pytestmark = pytest.mark.browser

SOURCES = [
    {"name": "Maxwell's equations", "url": "https://example.org/maxwell", "snippet": "Four equations"},
    {"name": "Gauss's law", "url": "https://example.org/gauss", "snippet": "Flux through a surface"},
    {"name": "Faraday's law", "url": "https://example.org/faraday", "snippet": "Induction"},
]
LINKED = "Gauss [1] and Faraday [3] in [the lecture](pplx://action/followup?q=more) notes."
MATH = r"Flux is \( \Phi = \oint E \cdot dA \) and \[ \nabla \cdot E = \rho / \epsilon_0 \] holds."


def shaped(uuid_digit: str, title: str, space: str | None, entry: ReplayEntry, day: int) -> ReplayThread:
    return ReplayThread(
        uuid=f"{uuid_digit * 8}-{uuid_digit * 4}-4{uuid_digit * 3}-8{uuid_digit * 3}-{uuid_digit * 12}",
        slug=f"{title.lower().replace(' ', '-')}-{uuid_digit}bCdEfGhIjKlMnOpQrStUv",
        title=title,
        space=space,
        last_query_datetime=f"2025-08-{day:02d}T10:00:00.000000",
        entries=[entry],
    )


@pytest.fixture
def library() -> ReplayLibrary:
    threads = [
        shaped("1", "Classic", "Physics", ReplayEntry("Classic?", "Yes [1].", SOURCES[:1]), 20),
        shaped(
            "2",
            "Blocks only",
            "Physics",
            ReplayEntry("Blocks?", LINKED, SOURCES, shape=Shape.BLOCKS_ONLY),
            19,
        ),
        shaped(
            "3", "Sources mode", None, ReplayEntry("Rows?", LINKED, SOURCES, shape=Shape.SOURCES_MODE), 18
        ),
        shaped(
            "4", "Deep research", "Reports", ReplayEntry("Report?", LINKED, SOURCES, shape=Shape.WORKFLOW), 17
        ),
        shaped("5", "Latex", "Physics", ReplayEntry("Flux?", MATH, shape=Shape.BLOCKS_ONLY), 16),
        *(
            shaped(str(d), f"Filler {d}", "Misc", ReplayEntry(f"Q{d}?", f"A{d}."), 10 - d)
            for d in range(6, 10)
        ),
    ]
    return ReplayLibrary(threads=threads, total_threads=99)


def markdown(settings: Settings, relpath: str) -> str:
    return (settings.export_root / relpath).read_text(encoding="utf-8")


def written(settings: Settings, title: str) -> str:
    names = [p for p in settings.export_root.rglob("*.md") if p.name.startswith(f"{title} (")]
    assert len(names) == 1, names
    return names[0].read_text(encoding="utf-8")


def test_real_list_items_without_is_pinned_are_all_discovered_with_their_space(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    report = export_with(logged_in)

    assert (report.discovered, report.new, report.failed) == (9, 9, 0)
    spaces = {p.parent.name for p in logged_in.export_root.rglob("*.md")}
    assert spaces == {"Physics", "Reports", "Misc", "General"}
    assert 'space: "Physics"' in written(logged_in, "Classic")


def test_a_server_that_caps_the_page_size_does_not_truncate_the_library(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    library.list_page_cap = 2  # the scraper asks for 3 per page

    report = export_with(logged_in)

    assert report.discovered == 9
    offsets = [
        r.body["offset"] for r in library.requests("/rest/thread/list_ask_threads") if r.body["limit"] == 3
    ]
    assert offsets == [0, 2, 4, 6, 8, 9]  # until the empty page


def test_listing_requests_send_exclude_asi_false(logged_in: Settings, library: ReplayLibrary) -> None:
    export_with(logged_in)

    bodies = [r.body for r in library.requests("/rest/thread/list_ask_threads") if r.body["limit"] == 3]
    assert bodies and all(body["exclude_asi"] is False for body in bodies)


def test_a_server_that_ignores_the_offset_ends_paging_when_no_new_uuid_comes(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    library.list_ignores_offset = True

    report = export_with(logged_in)

    assert report.discovered == 3
    assert len([r for r in library.requests("/rest/thread/list_ask_threads") if r.body["limit"] == 3]) == 2


def test_the_count_found_is_logged_against_the_untrusted_total_threads(
    logged_in: Settings, library: ReplayLibrary, caplog: pytest.LogCaptureFixture
) -> None:
    progress: list[str] = []
    with caplog.at_level(logging.INFO, logger="services.scraper.discovery"):
        export_with(logged_in, progress=lambda detail, _data: progress.append(detail))

    assert "found 9 threads; the listing's total_threads says 99" in caplog.text
    assert progress[0] == "found 9 threads (the listing claims 99)"


def test_blocks_without_text_and_a_sources_object_keep_answer_and_sources(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)

    text = written(logged_in, "Blocks only")
    assert "Gauss [1] and Faraday [3] in the lecture notes." in text
    assert "1. [Maxwell's equations](https://example.org/maxwell)" in text
    assert "3. [Faraday's law](https://example.org/faraday)" in text


def test_sources_only_in_sources_answer_mode_rows_are_numbered_by_citation(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)

    text = written(logged_in, "Sources mode")
    assert "Gauss [1] and Faraday [3]" in text
    # The rows arrive in reverse order: each source sits at its citation number all the same.
    assert "1. [Maxwell's equations](https://example.org/maxwell)" in text
    assert "3. [Faraday's law](https://example.org/faraday)" in text


def test_pplx_app_links_are_rendered_as_their_label(logged_in: Settings, library: ReplayLibrary) -> None:
    export_with(logged_in)

    text = written(logged_in, "Blocks only")
    assert "in the lecture notes." in text and "pplx://" not in text


def test_latex_delimiters_become_markdown_math(logged_in: Settings, library: ReplayLibrary) -> None:
    export_with(logged_in)

    text = written(logged_in, "Latex")
    assert r"Flux is $\Phi = \oint E \cdot dA$ and $$\nabla \cdot E = \rho / \epsilon_0$$ holds." in text


def test_a_deep_research_turn_is_read_from_the_workflow_block_and_its_sources(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)

    text = written(logged_in, "Deep research")
    assert "Gauss [1] and Faraday [3] in the lecture notes." in text  # the chunks, not the lagging text
    assert "Planning the report" not in text  # thinking is not the answer
    assert "2. [Gauss's law](https://example.org/gauss)" in text


def test_thread_requests_carry_the_parameters_the_web_app_sends(
    logged_in: Settings, library: ReplayLibrary
) -> None:
    export_with(logged_in)

    request = library.requests("/rest/thread/classic-1bCdEfGhIjKlMnOpQrStUv")[-1]
    assert request.query["with_schematized_response"] == ["true"]
    assert request.query["with_parent_info"] == ["true"]
    assert request.query["version"] == ["2.18"] and request.query["source"] == ["default"]
    assert request.query["supported_block_use_cases"] == list(BLOCK_USE_CASES)
    assert {"workflow_widgets", "workflow_steps", "preserve_latex"} <= set(BLOCK_USE_CASES)
