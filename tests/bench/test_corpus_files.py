"""The bench writes each BEIR document as the Markdown file a user would have: the sets' plain text
must come out of the product's loader as the same text, without sections the text never had."""

from __future__ import annotations

from pathlib import Path

from bench.retrieval_quality import markdown_file
from services.indexer.chunking import markdown_sections
from services.indexer.loaders import load_document

PLAIN = """To become root, run su and give the root password:

# apt-get install zsh
   # a comment indented three spaces
    # an indented code line

The # in the middle of a line is text.
"""


def test_a_plain_text_line_starting_with_a_hash_opens_no_section(tmp_path: Path) -> None:
    path = tmp_path / "d0000001.md"
    path.write_text(markdown_file({"title": "Debian FAQ: Packages", "text": PLAIN}), encoding="utf-8")
    loaded = load_document(path, 1_000_000, [tmp_path], 1_000_000)
    assert loaded.title == "Debian FAQ: Packages"
    sections = markdown_sections(loaded.text)
    assert [(s.start, s.end, s.heading_path) for s in sections] == [(0, len(loaded.text), ())]
    assert "\\# apt-get install zsh" in loaded.text and "   \\# a comment" in loaded.text
    assert "    # an indented code line" in loaded.text, "an indented code line is no heading: left as it is"
    assert "The # in the middle" in loaded.text


def test_without_the_escape_the_same_lines_would_open_sections() -> None:
    assert len(markdown_sections(PLAIN)) == 2, "so the escape is what keeps the text in one section"
