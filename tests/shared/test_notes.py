"""An answer saved as a note: links to the cited files at their lines, relative to the note; a new
file each time, never written through a link."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.contracts import Answer, Citation
from shared.notes import save_note

ASKED = "How often is it fed?"


def answer_citing(source: Path) -> Answer:
    quote = "It lives in the fridge and gets fed every Sunday."
    citation = Citation(
        number=1, document_id="d", chunk_id="d:0", title="Sourdough notes", source_uri=str(source),
        char_start=10, char_end=10 + len(quote), line=3, quote=quote, verified=True,
    )  # fmt: skip
    return Answer(
        question_id="0123456789abcdef",
        question="How often is it fed? (sourdough starter called)",
        markdown=f"{quote} [1]",
        citations=[citation],
    )


def test_a_note_links_its_markers_and_sources_to_the_cited_lines_relative_to_itself(tmp_path: Path) -> None:
    source = tmp_path / "my notes" / "sourdough.md"
    folder = tmp_path / "answers"
    folder.mkdir()
    path = save_note(folder, ASKED, answer_citing(source))
    assert path.name == "How often is it fed_ (01234567).md"
    text = path.read_text()
    assert text.startswith('---\ntitle: "How often is it fed?"\nquestion_id: "0123456789abcdef"\n')
    assert 'searched_for: "How often is it fed? (sourdough starter called)"' in text
    assert "\n# How often is it fed?\n\nIt lives in the fridge and gets fed every Sunday. [1]\n" in text
    link = "../my%20notes/sourdough.md#L3"
    assert f"1. [Sourdough notes — {source}:3]({link}) (quote found in file)\n   > It lives" in text
    assert text.endswith(f"\n[1]: <{link}>\n")


def test_a_notes_source_from_a_perplexity_thread_carries_the_threads_link(tmp_path: Path) -> None:
    address = "https://www.perplexity.ai/search/sourdough-abc"
    answer = answer_citing(tmp_path / "Sourdough (abc).md")
    answer.citations[0] = answer.citations[0].model_copy(update={"source_url": address})
    text = save_note(tmp_path, ASKED, answer).read_text()
    assert f"(quote found in file) <{address}>\n   > It lives" in text


def test_saving_again_writes_a_new_note_and_never_through_a_link(tmp_path: Path) -> None:
    folder = tmp_path / "answers"
    folder.mkdir()
    answer = answer_citing(tmp_path / "sourdough.md")
    first = save_note(folder, ASKED, answer)
    second = save_note(folder, ASKED, answer)
    assert second.name == "How often is it fed_ (01234567) (2).md" and first.read_text()
    (folder / "How often is it fed_ (01234567) (3).md").symlink_to(tmp_path / "elsewhere.md")
    third = save_note(folder, ASKED, answer)
    assert third.name.endswith("(4).md") and not (tmp_path / "elsewhere.md").exists()
    (tmp_path / "linked").symlink_to(folder)
    with pytest.raises(NotADirectoryError):
        save_note(tmp_path / "linked", ASKED, answer)
