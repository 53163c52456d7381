"""A PDF's running heads and feet are not part of its text: the lines at a page's ends that recur on
its pages (page numbers aside) are dropped, and nothing in the body is. The page shapes are the
ones pypdf extracts from Debian's libtasn1 manual (texinfo: "Chapter 4: Function reference 22" over
each page, a bare page number under a chapter's first page) and shared-mime-info's spec (DocBook:
the title and the page number at each page's foot)."""

from __future__ import annotations

from pathlib import Path

from services.indexer.loaders import load_document
from shared.extracted_text import without_running_lines
from tests.indexer.documents import write_pdf

TEXINFO_PAGES = [
    "Chapter 4: Function reference 20\nasn1 der coding\n[Function]int asn1_der_coding (asn1 node element)\n"
    "Returns: ASN1_SUCCESS if successful or an error value.",
    "Chapter 4: Function reference 21\nasn1 der decoding\nDecodes DER data into a structure.\n"
    "Returns: ASN1_SUCCESS if successful or an error value.",
    "Chapter 4: Function reference 22\nasn1 decode simple der\nDecodes a simple DER encoded type.\n"
    "The output is a pointer inside the der.",
    "Appendix A: Copying Information 23\nGNU Free Documentation License\nVersion 1.3, 3 November 2008",
    "Appendix A: Copying Information 24\nThe purpose of this License is to make a manual free.",
    "25\nADDENDUM: How to use this License for your documents.",
]

DOCBOOK_PAGES = [
    f"{heading}\n{body}\nShared MIME-info Database\n{n}"
    for n, (heading, body) in enumerate(
        [
            ("Introduction", "Many programs need to guess the type of a file."),
            ("Unified system", "In the past, each desktop had its own database."),
            ("Directory layout", "There are two important requirements for the way the data is stored."),
            (
                "The source XML files",
                "Each application that wishes to contribute to the database installs a file.",
            ),
        ],
        1,
    )
]


def test_chapter_heads_carrying_the_page_number_and_bare_page_numbers_are_dropped() -> None:
    pages = without_running_lines(TEXINFO_PAGES)
    assert not any("Chapter 4: Function reference" in page for page in pages)
    assert not any("Appendix A: Copying Information" in page for page in pages)
    assert pages[0].startswith("asn1 der coding") and pages[2].startswith("asn1 decode simple der")


def test_a_body_line_that_recurs_at_a_pages_foot_without_the_page_number_is_kept() -> None:
    pages = without_running_lines(TEXINFO_PAGES)
    assert pages[0].endswith("Returns: ASN1_SUCCESS if successful or an error value.")
    assert pages[1].endswith("Returns: ASN1_SUCCESS if successful or an error value.")


def test_a_title_and_page_number_at_every_foot_are_dropped_and_the_body_kept() -> None:
    pages = without_running_lines(DOCBOOK_PAGES)
    assert pages[1] == "Unified system\nIn the past, each desktop had its own database."
    assert all("Shared MIME-info Database" not in page for page in pages)


def test_two_pages_are_too_few_to_tell_a_running_line_from_text() -> None:
    assert without_running_lines(DOCBOOK_PAGES[:2]) == DOCBOOK_PAGES[:2]


def test_an_indexed_pdf_has_no_running_head_in_its_text(tmp_path: Path) -> None:
    bodies = [page.partition("\n")[2] for page in TEXINFO_PAGES[:3]]
    pages = [f"Chapter 4: Function reference {n}\n{body}" for n, body in enumerate(bodies, 9)]
    text = load_document(write_pdf(tmp_path / "manual.pdf", pages), 10_000_000).text
    assert "Chapter 4" not in text
    assert "Decodes a simple DER encoded type." in text and "asn1 der coding" in text


def test_a_page_that_would_lose_every_line_is_kept_whole() -> None:
    pages = [f"Section {n}\nStep {n} of the guide." for n in range(1, 5)]  # numbers that follow the pages
    assert without_running_lines(pages) == pages
