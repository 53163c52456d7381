"""Each loader on real files: text plus the positions a citation needs, and a clear reason when it refuses."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from services.indexer.loaders import LoadError, SkippedFileError, load_document
from shared.contracts import SourceKind
from shared.markdown_source import plain_inline
from tests.indexer.documents import ARTICLE_HTML, write_pdf

REPO = Path(__file__).parents[2]

LIMIT = 1_000_000

EXPORTED_THREAD = """---
title: Cross-encoder reranking
uuid: 8a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d
space: Retrieval
url: https://www.perplexity.ai/search/cross-encoder-reranking-XyZ
created: 2026-04-11T18:02:00Z
updated: 2026-04-11T18:05:00Z
---

# Cross-encoder reranking

A cross-encoder scores each pair.
"""


def test_markdown_front_matter_becomes_metadata_and_is_not_part_of_the_text(tmp_path: Path) -> None:
    path = tmp_path / "thread.md"
    path.write_text(EXPORTED_THREAD)
    loaded = load_document(path, LIMIT)
    assert loaded.kind is SourceKind.MARKDOWN
    assert loaded.title == "Cross-encoder reranking"
    assert loaded.metadata["space"] == "Retrieval"
    assert loaded.metadata["url"] == "https://www.perplexity.ai/search/cross-encoder-reranking-XyZ"
    assert loaded.metadata["updated"].startswith("2026-04-11T18:05:00")
    assert loaded.text.startswith("\n# Cross-encoder reranking")
    assert "uuid:" not in loaded.text


def test_markdown_without_front_matter_takes_its_title_from_the_first_heading(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_text("Intro line\n\n# Real title\n\nBody.\n")
    loaded = load_document(path, LIMIT)
    assert loaded.title == "Real title"
    assert loaded.metadata == {}


def test_a_heading_title_is_its_plain_text_without_link_or_emphasis_marks() -> None:
    """Debian's libcbor README opens with ``# [libcbor](https://github.com/PJK/libcbor)``; its title is
    what a reader sees, not the link markup (tests/fixtures/readmes/libcbor-README.md)."""
    loaded = load_document(REPO / "tests" / "fixtures" / "readmes" / "libcbor-README.md", LIMIT)
    assert loaded.title == "libcbor"
    assert plain_inline("**Bold** and `code`, ![badge](x.svg)") == "Bold and code, badge"


def test_plain_text_is_kept_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "trip.txt"
    body = "Day one: Lisbon.\nDay two: Sintra — the palace opens at 9:30.\n"
    path.write_text(body, encoding="utf-8")
    loaded = load_document(path, LIMIT)
    assert (loaded.kind, loaded.text, loaded.title) == (SourceKind.TEXT, body, "trip")
    assert loaded.page_at(5) is None


def test_pdf_text_keeps_a_page_table_so_each_offset_knows_its_page(tmp_path: Path) -> None:
    path = write_pdf(
        tmp_path / "paper.pdf",
        ["Page one talks about sourdough starters.", "Page two is about rye flour.", "Page three: baking."],
        title="Bread science",
    )
    loaded = load_document(path, LIMIT)
    assert loaded.kind is SourceKind.PDF
    assert loaded.title == "Bread science"
    assert loaded.metadata["pages"] == "3"
    for page, phrase in enumerate(["sourdough starters", "rye flour", "baking"], start=1):
        offset = loaded.text.index(phrase)
        assert loaded.page_at(offset) == page
    ranges = loaded.page_ranges()
    assert len(ranges) == 3
    assert "rye flour" in loaded.text[ranges[1][0] : ranges[1][1]]


def test_html_keeps_main_content_with_headings_and_code_and_drops_navigation(tmp_path: Path) -> None:
    path = tmp_path / "article.html"
    path.write_text(ARTICLE_HTML)
    loaded = load_document(path, LIMIT)
    assert loaded.kind is SourceKind.HTML
    assert loaded.title == "Rerankers in practice"
    assert "## Batching the pairs" in loaded.text
    assert "```" in loaded.text and "model.predict(batch)" in loaded.text
    assert "Shop our merchandise" not in loaded.text
    assert "newsletter" not in loaded.text


def test_encrypted_pdf_is_refused_with_a_clear_reason(tmp_path: Path) -> None:
    path = write_pdf(tmp_path / "secret.pdf", ["Top secret numbers."], user_password="hunter2")
    with pytest.raises(LoadError, match="encrypted PDF"):
        load_document(path, LIMIT)


def test_corrupt_pdf_is_refused_with_a_clear_reason(tmp_path: Path) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\ngarbage without xref or trailer")
    with pytest.raises(LoadError, match="corrupt PDF"):
        load_document(path, LIMIT)


def test_a_windows_1252_text_file_is_indexed_as_its_characters_with_the_encoding_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "latin1.txt"
    text = "Café au lait, crème brûlée — 3 € “chez Noël”.\n"
    path.write_bytes(text.encode("cp1252"))
    loaded = load_document(path, LIMIT)
    assert loaded.text == text and loaded.metadata["encoding"] == "windows-1252"


def test_the_hash_is_of_the_very_bytes_indexed_and_the_body_start_is_after_the_front_matter(
    tmp_path: Path,
) -> None:
    path = tmp_path / "thread.md"
    raw = b"\xef\xbb\xbf" + EXPORTED_THREAD.encode()
    path.write_bytes(raw)
    loaded = load_document(path, LIMIT)
    assert loaded.content_hash == hashlib.sha256(raw).hexdigest()
    file_text = raw.decode("utf-8-sig")  # offsets count after the byte order mark
    assert file_text[loaded.body_start :] == loaded.text
    assert file_text[: loaded.body_start].startswith("---\ntitle:")


def test_restructuredtext_is_indexed_as_text_titled_by_its_first_underlined_heading(tmp_path: Path) -> None:
    path = tmp_path / "README.rst"
    path.write_text(
        ".. comment: generated\n\n"
        "=================================\n"
        ":program:`libfoo` for **Debian**\n"
        "=================================\n\n"
        "Building\n--------\n\nRun ``dpkg-buildpackage -us -uc`` in the source tree.\n"
    )
    loaded = load_document(path, LIMIT)
    assert loaded.kind is SourceKind.TEXT and loaded.title == "libfoo for Debian"
    assert loaded.text == path.read_text() and loaded.body_start == 0


def test_asciidoc_is_indexed_as_text_titled_by_its_document_title(tmp_path: Path) -> None:
    path = tmp_path / "guide.adoc"
    path.write_text(
        "// a comment\n= The Asciidoctor Guide\nDoc Writer <doc@example.org>\n\n"
        "== Install\n\ngem install asciidoctor\n"
    )
    loaded = load_document(path, LIMIT)
    assert loaded.kind is SourceKind.TEXT and loaded.title == "The Asciidoctor Guide"
    untitled = tmp_path / "notes.adoc"
    untitled.write_text("== Only a section\n\ntext\n")
    assert load_document(untitled, LIMIT).title == "notes"


def test_binary_renamed_md_is_skipped_not_guessed_at(tmp_path: Path) -> None:
    path = tmp_path / "image.md"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(SkippedFileError, match="binary content"):
        load_document(path, LIMIT)


def test_zero_byte_and_oversized_files_are_skipped_before_reading(tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.touch()
    with pytest.raises(SkippedFileError, match="empty file"):
        load_document(empty, LIMIT)
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    with pytest.raises(SkippedFileError, match=r"52\.4 MB, above the 1\.0 MB limit"):
        load_document(huge, LIMIT)


def test_unknown_extension_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "data.xlsx"
    path.write_bytes(b"PK\x03\x04")
    with pytest.raises(SkippedFileError, match=r"unsupported file type \.xlsx"):
        load_document(path, LIMIT)
