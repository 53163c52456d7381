"""Imports of Perplexity's own exports, on files built in the formats Perplexity produces."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import pytest

from services.scraper.checkpoint import CHECKPOINT_NAME, content_hash
from services.scraper.imports import threads_from_data_export, threads_from_markdown_dir, write_threads
from shared.settings import Settings
from testing.perplexity_replay import COOKIE, ReplayServer
from tests.scraper.conftest import data_export, export_with, front_matter, section

BASE = "https://www.perplexity.ai"
MAX_BYTES = 1_000_000


def test_data_export_import_writes_the_scrape_layout_and_skips_on_reimport(tmp_path: Path) -> None:
    source, export_dir = data_export(tmp_path / "perplexity.json"), tmp_path / "exports"

    first = write_threads(threads_from_data_export(source, BASE, MAX_BYTES), export_dir)
    second = write_threads(threads_from_data_export(source, BASE, MAX_BYTES), export_dir)

    assert (first.new, second.new, second.changed, second.unchanged) == (2, 0, 0, 2)
    tea = export_dir / first.written[0]
    assert tea.parent.name == "General" and tea.name.startswith("Tea_ green vs black_ (")
    meta = front_matter(tea)
    assert meta["title"] == "Tea: green vs black?" and meta["created"] == "2025-05-01T08:00:00Z"
    assert meta["updated"] == "2025-05-02T08:00:00Z"
    text = tea.read_text()
    assert "## Green or black tea for caffeine?\n\nBlack tea has more [1]." in text
    assert "## And matcha?\n\nMatcha has the most." in text
    checkpoint = json.loads((export_dir / CHECKPOINT_NAME).read_text())
    thread = threads_from_data_export(source, BASE, MAX_BYTES).threads[0]
    assert checkpoint["threads"][thread.uuid]["hash"] == content_hash(thread)


def official_files(replay: ReplayServer, folder: Path) -> None:
    """Download the official per-thread Markdown over real HTTP; split the long thread in two files
    that overlap by one turn."""
    folder.mkdir()
    with httpx.Client(base_url=replay.base_url, cookies={COOKIE: "token-ok"}) as client:
        for thread in replay.library.threads:
            if thread.gone:
                continue
            reply = client.post(
                "/rest/thread/export",
                params={"version": "2.18", "source": "default"},
                json={"thread_uuid": thread.uuid, "format": "md"},
            )
            reply.raise_for_status()
            body = reply.json()
            content = base64.b64decode(body["file_content_64"]).decode()
            stem = body["filename"].removesuffix(".md").replace("/", "_").replace('"', "_")
            if (folder / f"{stem}.md").exists():
                stem = f"{stem} {thread.uuid[:4]}"
            if len(thread.entries) > 2:  # two parts that overlap by a turn, as a long thread downloads
                turns = content.split("\n---\n")
                (folder / f"{stem}.md").write_text("\n---\n".join(turns[:2]))
                (folder / f"{stem}(2).md").write_text("\n---\n".join(turns[1:]))
            else:
                (folder / f"{stem}.md").write_text(content)


def test_official_markdown_import_joins_parts_and_maps_footnotes_to_sources(
    replay: ReplayServer, tmp_path: Path
) -> None:
    official_files(replay, tmp_path / "downloads")
    export_dir = tmp_path / "exports"

    report = write_threads(threads_from_markdown_dir(tmp_path / "downloads", MAX_BYTES), export_dir)

    assert report.new == 6
    quantum = (
        export_dir / "General" / next(n for n in (p.split("/")[1] for p in report.written) if "Quantum" in n)
    )
    text = quantum.read_text()
    assert front_matter(quantum)["title"] == "Quantum error correction basics"
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## What is quantum error correction?",
        "## How does the surface code work?",
        "## What is the threshold?",
    ]
    first = section(text, "What is quantum error correction?")
    assert "It protects qubits [1] using codes [2]." in first
    assert "1. [https://example.org/surface](https://example.org/surface)" in first
    assert "2. [https://example.org/threshold](https://example.org/threshold)" in first
    assert "<img" not in text and "⁂" not in text and "display:none" not in text
    again = write_threads(threads_from_markdown_dir(tmp_path / "downloads", MAX_BYTES), export_dir)
    assert (again.new, again.changed, again.unchanged) == (0, 0, 6)


def official_turn(number: int, query: str, answer: str, url: str) -> str:
    return f"# {query}\n\n{answer} [^{number}_1]\n\n[^{number}_1]: {url}\n"


def test_a_rule_inside_an_answer_is_not_a_turn_boundary(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    answer = "Part one.\n\n---\n\nPart two, after a rule."
    text = (
        official_turn(1, "Rules?", answer, "https://a.example")
        + "\n---\n\n"
        + official_turn(2, "Next?", "Yes.", "https://b.example")
    )
    (folder / "Rules.md").write_text(text)

    (thread,) = threads_from_markdown_dir(folder, MAX_BYTES).threads

    assert [t.question for t in thread.turns] == ["Rules?", "Next?"]
    assert "Part one." in thread.turns[0].answer and "Part two, after a rule." in thread.turns[0].answer


@pytest.mark.parametrize("part_name", ["Long (1).md", "Long(1).md", "Long-1.md"])
def test_numbered_parts_join_their_first_file_and_a_repeated_turn_is_kept_once(
    tmp_path: Path, part_name: str
) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    first, second, third = (
        official_turn(n, f"Question {n}?", f"Answer {n}.", f"https://{n}.example") for n in (1, 2, 3)
    )
    (folder / "Long.md").write_text(first + "\n---\n\n" + second)
    (folder / part_name).write_text(second + "\n---\n\n" + third)
    (folder / "Chapter-1.md").write_text(official_turn(1, "Alone?", "Alone.", "https://c.example"))

    threads = {t.title: t for t in threads_from_markdown_dir(folder, MAX_BYTES).threads}

    assert sorted(threads) == ["Chapter-1", "Long"]
    assert [t.question for t in threads["Long"].turns] == ["Question 1?", "Question 2?", "Question 3?"]


def test_a_space_known_only_by_its_uuid_is_named_for_it_not_by_the_raw_uuid(tmp_path: Path) -> None:
    imported = threads_from_data_export(data_export(tmp_path / "export.json"), BASE, MAX_BYTES)

    assert [t.space for t in imported.threads] == ["General", ""]
    report = write_threads(imported, tmp_path / "exports")
    assert sorted(p.split("/")[0] for p in report.written) == ["General", "Space c-1"]


@pytest.mark.browser
def test_a_thread_both_scraped_and_imported_is_one_file(
    logged_in: Settings, replay: ReplayServer, tmp_path: Path
) -> None:
    official_files(replay, tmp_path / "downloads")
    imported = threads_from_markdown_dir(tmp_path / "downloads", MAX_BYTES)
    export_dir = logged_in.export_root

    first_import = write_threads(imported, export_dir)
    scraped = export_with(logged_in)
    again = write_threads(imported, export_dir)

    assert first_import.new == 6
    assert (scraped.new, scraped.changed) == (0, 6)  # each scraped thread replaced its imported file
    assert (again.new, again.changed, again.unchanged) == (0, 0, 6)  # and the import leaves it alone
    files = list(export_dir.rglob("*.md"))
    assert len(files) == 6
    assert all('source: "perplexity"' in f.read_text() and "url:" in f.read_text() for f in files)
