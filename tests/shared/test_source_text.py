"""The one reader of a source file's text (``shared.source_text``): the decoding the indexer and every
later reader share, on real files written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.safe_files import FileTooLargeError, RefusedFileError
from shared.source_text import char_offset, decode_source, read_file_text

FRENCH = "Le café « crème » coûte 3 € — c’est “cher”.\nÉlève, garçon, Noël.\n"


def test_utf8_is_read_with_its_byte_order_mark_dropped() -> None:
    decoded = decode_source(b"\xef\xbb\xbf" + "Grüße\n".encode())
    assert (decoded.text, decoded.encoding) == ("Grüße\n", "utf-8")


def test_a_windows_1252_file_is_read_as_the_characters_its_author_typed() -> None:
    decoded = decode_source(FRENCH.encode("cp1252"))
    assert (decoded.text, decoded.encoding) == (FRENCH, "windows-1252")


def test_bytes_windows_1252_leaves_undefined_are_kept_as_their_latin_1_controls_not_lost() -> None:
    raw = b"a\x81b\x8dc\x8fd\x90e\x9df \xe9"
    decoded = decode_source(raw)
    assert decoded.text == "a\x81b\x8dc\x8fd\x90e\x9df é"
    assert decoded.text.encode("latin-1") == raw


def test_a_byte_offset_maps_to_the_character_the_decoded_text_has_there() -> None:
    utf8 = b"\xef\xbb\xbf" + "é – PYTHONMALLOC".encode()
    text = decode_source(utf8).text
    assert char_offset(utf8, utf8.index(b"PYTHON"), "utf-8") == text.index("PYTHON")
    latin = FRENCH.encode("cp1252")
    assert char_offset(latin, latin.index(b"cher"), "windows-1252") == FRENCH.index("cher")


def test_a_text_file_is_read_only_as_a_regular_file_under_the_roots_within_the_cap(tmp_path: Path) -> None:
    library, elsewhere = tmp_path / "library", tmp_path / "elsewhere"
    library.mkdir(), elsewhere.mkdir()
    note = library / "note.txt"
    note.write_bytes(FRENCH.encode("cp1252"))
    assert read_file_text(note, 1_000, [library]).text == FRENCH

    with pytest.raises(RefusedFileError, match="outside the configured roots"):
        read_file_text(note, 1_000, [elsewhere])
    with pytest.raises(FileTooLargeError):
        read_file_text(note, 10, [library])
    link = library / "link.txt"
    link.symlink_to(note)
    with pytest.raises(RefusedFileError, match="not followed"):
        read_file_text(link, 1_000, [library])


def test_a_pdf_or_html_file_is_not_read_as_text_its_indexed_text_is_an_extraction(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<p>hello</p>")
    with pytest.raises(ValueError, match=r"\.html is not read as text"):
        read_file_text(page, 1_000, [tmp_path])
