"""``hindsight search`` prints where each passage is as an editor or viewer opens it (``path:line``,
``path#page=N``), never character offsets, and its snippet is cut between words, not inside one."""

from __future__ import annotations

from cli.actions.search import render, snippet
from cli.console import console
from shared.contracts import Candidate, Chunk, SearchMode, SearchResponse, SourceKind


def found(
    text: str, kind: SourceKind, uri: str, *, line: int | None = None, page: int | None = None
) -> Candidate:
    chunk = Chunk(
        id=f"{uri}#0", document_id=uri, ordinal=0, text=text, heading_path=["Install", "From source"],
        page=page, char_start=42112, char_end=42112 + len(text), title="jq manual", source_uri=uri, kind=kind,
    )  # fmt: skip
    return Candidate(chunk=chunk, ranks={"bm25": 1}, line=line)


def rendered(*candidates: Candidate) -> str:
    response = SearchResponse(
        query="build jq", mode=SearchMode.HYBRID, resolved_mode=SearchMode.HYBRID,
        candidates=list(candidates), legs={"bm25": len(candidates)}, elapsed_ms=12.0,
    )  # fmt: skip
    width = console.width
    console.width = 240  # a wide terminal, so each place prints on one line
    try:
        with console.capture() as captured:
            render(response)
    finally:
        console.width = width
    return captured.get()


def test_a_text_passage_shows_its_line_a_pdf_its_page_and_html_its_section_never_offsets() -> None:
    out = rendered(
        found("Run autoreconf -i first.", SourceKind.MARKDOWN, "/docs/jq/README.md", line=17),
        found("Pass --with-oniguruma=builtin.", SourceKind.PDF, "/docs/jq/manual.pdf", page=4),
        found("make check runs the tests.", SourceKind.HTML, "/docs/jq/manual.html"),
    )
    assert "/docs/jq/README.md:17" in out
    assert "/docs/jq/manual.pdf#page=4" in out
    assert "/docs/jq/manual.html (Install › From source)" in out
    assert "42112" not in out


def test_a_long_snippet_is_cut_between_words_with_a_mark() -> None:
    command = "git clone https://example.org/jq.git && cd jq && autoreconf -i && ./configure && make"
    text = "To build from source: " + command + " " + "then install it. " * 20
    cut = snippet(text, limit=100)
    assert cut.endswith(" …")
    assert text.startswith(cut.removesuffix(" …"))
    assert len(cut) <= 102
    assert text[len(cut.removesuffix(" …"))] == " "


def test_a_short_passage_is_shown_whole_on_one_line() -> None:
    assert snippet("make\n  check") == "make check"
