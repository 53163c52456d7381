"""A PDF's and an HTML file's citation opens its passage: the gateway extracts the text the indexer
indexed (``shared.extracted_text``, the same rules) and finds the quote in it. Real files: PDFs made
with fpdf2, the loader tests' HTML article; the indexer's own loader gives the offsets a citation has."""

from __future__ import annotations

from pathlib import Path

from services.gateway.evidence import cited_file_bytes, evidence_for
from services.indexer.loaders import load_document
from shared.citations import citation_place
from shared.contracts import Citation
from tests.gateway.conftest import PAGES
from tests.indexer.documents import ARTICLE_HTML, write_pdf


def cite(path: Path, quote: str, page: int | None = None) -> Citation:
    """A citation as the synthesizer makes one: offsets in the document's extracted text."""
    text = load_document(path, 10_000_000).text
    start = text.index(quote)
    return Citation(
        number=1,
        document_id="d",
        chunk_id="c",
        title=path.stem,
        source_uri=str(path),
        page=page,
        char_start=start,
        char_end=start + len(quote),
        quote=quote,
        verified=True,
    )


def test_a_pdf_citation_opens_its_whole_page_with_the_quote_and_the_page_number(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "libtasn1.pdf", PAGES)
    quote = "The function asn1_der_coding encodes a structure in DER"
    evidence = evidence_for(cite(pdf, quote, page=2), [tmp_path])
    assert evidence.located and evidence.extracted and evidence.page == 2 and evidence.line is None
    page_text = evidence.before + evidence.quote + evidence.after
    assert page_text.startswith("Chapter 2. Usage.") and "ASN1_SUCCESS" in page_text
    assert "Chapter 1" not in page_text and "Chapter 3" not in page_text  # the cited page, no other
    assert citation_place(cite(pdf, quote, page=2)) == f"{pdf}#page=2"


def test_an_html_citation_opens_the_extracted_text_around_the_quote_with_its_heading(tmp_path: Path) -> None:
    page = tmp_path / "rerankers.html"
    page.write_text(ARTICLE_HTML)
    quote = "Scoring sixty-four pairs per batch keeps the CPU busy"
    evidence = evidence_for(cite(page, quote), [tmp_path])
    assert evidence.located and evidence.extracted and evidence.line is None
    assert "Batching the pairs" in evidence.before  # the heading above the passage, as indexed
    assert "Shop our merchandise" not in evidence.before + evidence.after  # navigation is not text


def test_a_pdf_that_no_longer_parses_gives_the_quote_alone_and_no_error(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "manual.pdf", PAGES)
    citation = cite(pdf, "asn1_strerror returns a string", page=3)
    pdf.write_bytes(b"%PDF-1.4 damaged after indexing")
    evidence = evidence_for(citation, [tmp_path])
    assert not evidence.located and evidence.quote == "asn1_strerror returns a string"
    assert evidence.before == evidence.after == ""


def test_a_pdf_outside_the_roots_is_not_read(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "elsewhere.pdf", PAGES)
    evidence = evidence_for(cite(pdf, "asn1_strerror returns a string", page=3), [tmp_path / "notes"])
    assert not evidence.located and evidence.before == ""


def test_the_cited_pdf_or_html_page_is_served_whole_for_the_page_only_from_under_the_roots(
    tmp_path: Path,
) -> None:
    pdf = write_pdf(tmp_path / "libtasn1.pdf", PAGES)
    citation = cite(pdf, "asn1_strerror returns a string", page=3)
    assert cited_file_bytes(citation, [tmp_path]) == (pdf.read_bytes(), "application/pdf")
    assert cited_file_bytes(citation, [tmp_path / "notes"]) is None  # outside the indexed roots
    article = tmp_path / "rerankers.html"
    article.write_text(ARTICLE_HTML)
    found = cited_file_bytes(
        cite(article, "Scoring sixty-four pairs per batch keeps the CPU busy"), [tmp_path]
    )
    assert found == (ARTICLE_HTML.encode(), "text/html")


def test_a_pdf_swapped_for_a_link_or_a_markdown_source_is_never_served_as_a_file(tmp_path: Path) -> None:
    (tmp_path / "private").mkdir()
    secret = write_pdf(tmp_path / "private" / "secret.pdf", PAGES)
    library = tmp_path / "library"
    library.mkdir()
    pdf = write_pdf(library / "libtasn1.pdf", PAGES)
    citation = cite(pdf, "asn1_strerror returns a string", page=3)
    pdf.unlink()
    pdf.symlink_to(secret)  # a link planted where the indexed PDF was
    assert cited_file_bytes(citation, [library]) is None
    note = library / "notes.md"
    note.write_text("asn1_strerror returns a string\n")
    assert cited_file_bytes(cite(note, "asn1_strerror returns a string"), [library]) is None


def test_a_windows_1252_text_files_evidence_says_how_it_was_decoded_and_a_utf8_files_says_utf8(
    tmp_path: Path,
) -> None:
    quote = "La crème brûlée coûte 3 € chez Noël."
    latin = tmp_path / "menu.txt"
    latin.write_bytes(f"Carte\n{quote}\n".encode("cp1252"))
    unicode = tmp_path / "menu-utf8.txt"
    unicode.write_text(f"Carte\n{quote}\n", encoding="utf-8")

    evidence = evidence_for(cite(latin, quote), [tmp_path])
    assert evidence.located and evidence.quote == quote and evidence.line == 2
    assert evidence.encoding == "windows-1252"
    assert evidence_for(cite(unicode, quote), [tmp_path]).encoding == "utf-8"
