"""A 34-thread library scraped in real Chromium, downloaded as official Markdown and sent as a data
request, lands whole: zero threads merged, dropped or duplicated, every turn's question the user's,
every code block byte-identical, every footnote a numbered source (testing/perplexity_library.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.scraper.imports import threads_from_data_export, threads_from_markdown_dir, write_threads
from services.scraper.library import check_library, front_matter, turn_questions
from shared.markdown_source import fenced_ranges, split_front_matter
from shared.settings import Settings
from testing.perplexity_library import (
    BOTH,
    IMPORTED,
    SCRAPED,
    ExpectedThread,
    data_export,
    expected_threads,
    official_files,
    replay_library,
)
from testing.perplexity_replay import ReplayLibrary, ReplayServer
from tests.scraper.conftest import export_with

pytestmark = pytest.mark.browser

MAX_BYTES = 1_000_000
FENCED_BLOCK = re.compile(r"^```[^\n]*\n.*?^```$", re.MULTILINE | re.DOTALL)


@pytest.fixture
def library() -> ReplayLibrary:
    return replay_library()


@pytest.fixture
def exported(logged_in: Settings, replay: ReplayServer, tmp_path: Path) -> Iterator[Path]:
    """The export folder after a scrape, an import of the downloads and one of the data request."""
    export_with(logged_in)
    official_files(tmp_path / "downloads")
    data_export(tmp_path / "perplexity.json")
    write_threads(threads_from_markdown_dir(tmp_path / "downloads", MAX_BYTES), logged_in.export_root)
    write_threads(
        threads_from_data_export(tmp_path / "perplexity.json", BASE, MAX_BYTES), logged_in.export_root
    )
    yield logged_in.export_root


BASE = "https://www.perplexity.ai"


def one_line(text: str) -> str:
    return " ".join(text.split())


def sources_of(section: str) -> list[str]:
    """The URLs (or "" for a name alone) of a turn's numbered **Sources** list, in order."""
    listing = section.partition("**Sources**\n\n")[2].split("\n\n", 1)[0]
    urls = []
    for line in listing.splitlines():
        link = re.match(r"^\d+\. \[.*\]\((?P<url>[^)]*)\)$", line)
        urls.append(link.group("url") if link else "")
    return urls


def turn_sections(text: str) -> list[str]:
    """Each turn's section (from its ``## `` heading to the next, outside fences)."""
    fences = fenced_ranges(text)
    starts = [
        m.start()
        for m in re.finditer(r"^## ", text, re.MULTILINE)
        if not any(lo <= m.start() < hi for lo, hi in fences)
    ]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def marker(thread: ExpectedThread) -> str:
    """Text only this thread's file holds: its first source's URL, else its answer's opening."""
    return next((url for urls in thread.sources for url in urls if url), thread.answers[0][:11])


def file_of(files: dict[str, str], thread: ExpectedThread) -> str:
    matches = [
        path
        for path, text in files.items()
        if front_matter(split_front_matter(text)[0] or "")["title"] == thread.title
        and turn_questions(text)[:1] == [one_line(thread.questions[0])]
        and marker(thread) in text
    ]
    assert len(matches) == 1, f"{thread.title!r}: {len(matches)} files {matches}"
    return matches[0]


def test_the_replay_library_exports_and_imports_every_thread_once_and_whole(exported: Path) -> None:
    files = {
        p.relative_to(exported).as_posix(): p.read_text(encoding="utf-8") for p in exported.rglob("*.md")
    }
    expected = expected_threads()

    assert len(expected) >= 30
    assert len(files) == len(expected), "threads merged, dropped or duplicated"
    assert len({file_of(files, thread) for thread in expected}) == len(expected)
    for thread in expected:
        text = files[file_of(files, thread)]
        meta = front_matter(split_front_matter(text)[0] or "")
        assert meta["space"] == thread.space, thread.title
        assert turn_questions(text) == [one_line(q) for q in thread.questions], thread.title
        for question in (q for q in thread.questions if "\n" in q):
            assert "\n".join(f"> {line}" for line in question.splitlines()) in text
        for answer in thread.answers:
            for block in FENCED_BLOCK.findall(answer):
                assert block in text, f"{thread.title}: code block changed"
        sections = turn_sections(text)
        assert [sources_of(s) for s in sections] == [[u for u in urls] for urls in thread.sources], (
            thread.title
        )
        for line in thread.attachment_lines:
            assert line in text, thread.title
        assert "[^" not in text and "⁂" not in text and "_(no answer)_" not in text, thread.title


def test_a_passage_in_a_later_turn_names_that_turn_and_the_library_check_counts_every_origin(
    exported: Path, question_of_passage: Callable[[str, str], str | None]
) -> None:
    (postgres,) = exported.glob("Code/Install PostgreSQL on Ubuntu*.md")
    text = postgres.read_text(encoding="utf-8")
    assert question_of_passage(text, "Then set `listen_addresses") == "How do I enable remote connections?"
    assert question_of_passage(text, "Create a role") == "How do I install PostgreSQL on Ubuntu 24.04?"

    check = check_library(exported, MAX_BYTES)

    expected = expected_threads()
    assert check.by_origin == {
        origin: sum(t.origin == origin for t in expected) for origin in (SCRAPED, IMPORTED, BOTH)
    }
    assert check.unreadable == [] and check.turn_mismatches == []
