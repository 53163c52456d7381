"""A cited file is read one way by the indexer, the synthesizer's quote check and the gateway's
evidence view (``shared.source_text``): a Windows-1252 file, a UTF-8 file with a byte order mark and
front matter are quoted verbatim at their line, and a file swapped for a link is read by neither.
Real files, the indexer's own loader, the synthesizer's ``cite`` and the gateway's ``evidence_for``."""

from __future__ import annotations

from pathlib import Path

from services.gateway.evidence import evidence_for
from services.synthesizer.citations import cite
from shared.contracts import Candidate, Citation, Fact
from shared.source_text import decode_source
from tests.synthesizer.conftest import chunks_of

FRONT_MATTER = "---\ntitle: Café notes\nurl: https://www.perplexity.ai/search/cafe-XyZ\n---\n"
FRENCH_BODY = (
    "# Café\n\nLe café « crème » coûte 3 € chez Noël.\n"
    "La crème brûlée se sert froide, avec “un peu” de sucre caramélisé.\n"
)
QUOTE = "La crème brûlée se sert froide, avec “un peu” de sucre caramélisé."


def cited(path: Path, quote: str) -> Citation:
    """The synthesizer's citation of ``quote`` in the file as the indexer chunked it."""
    chunk = chunks_of(path, path.stem)[0]
    fact = Fact(
        text=quote,
        chunk_id=chunk.id,
        quote=quote,
        quote_start=chunk.text.index(quote),
        source_title=path.stem,
    )
    return cite(1, fact, Candidate(chunk=chunk))


def test_a_windows_1252_file_is_quoted_verbatim_at_its_line_by_the_synthesizer_and_the_evidence_view(
    tmp_path: Path,
) -> None:
    path = tmp_path / "café.md"
    raw = (FRONT_MATTER + FRENCH_BODY).encode("cp1252")
    path.write_bytes(raw)
    text = raw.decode("cp1252")

    citation = cited(path, QUOTE)
    assert citation.verified and text[citation.char_start : citation.char_end] == QUOTE
    assert (citation.line, citation.column) == (8, 1)

    evidence = evidence_for(citation, [tmp_path])
    assert evidence.located and evidence.line == 8 and evidence.quote == QUOTE
    assert evidence.before.endswith("coûte 3 € chez Noël.\n")
    assert evidence.thread_url == "https://www.perplexity.ai/search/cafe-XyZ"


def test_a_byte_order_mark_is_not_a_character_for_the_synthesizer_or_the_evidence_view(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.txt"
    raw = b"\xef\xbb\xbf" + ("Line one.\n" + QUOTE + "\n").encode()
    path.write_bytes(raw)
    text = decode_source(raw).text

    citation = cited(path, QUOTE)
    assert citation.verified and citation.char_start == len("Line one.\n") == text.index(QUOTE)

    evidence = evidence_for(citation, [tmp_path])
    assert evidence.located and evidence.line == 2
    assert evidence.before == "Line one.\n", "the text around the quote is the file's, without the BOM"


def test_a_cited_file_swapped_for_a_link_is_read_by_neither_the_synthesizer_nor_the_evidence_view(
    tmp_path: Path,
) -> None:
    path = tmp_path / "note.md"
    path.write_text(FRENCH_BODY)
    chunk = chunks_of(path, "note")[0]
    secret = tmp_path / "secret.md"
    secret.write_text(FRENCH_BODY.replace("Noël", "PRIVATE"))
    path.unlink()
    path.symlink_to(secret)

    fact = Fact(
        text=QUOTE, chunk_id=chunk.id, quote=QUOTE, quote_start=chunk.text.index(QUOTE), source_title="n"
    )
    citation = cite(1, fact, Candidate(chunk=chunk))
    assert citation.line is None, "the link is not followed: the citation keeps the indexed offsets"

    evidence = evidence_for(citation, [tmp_path])
    assert not evidence.located and "PRIVATE" not in evidence.before + evidence.after


def test_a_citation_carries_its_chunks_thread_address_and_the_evidence_view_shows_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rye.md"
    path.write_text("# Rye\n\n" + QUOTE + "\n")  # no front matter: the address comes from the chunk
    address = "https://www.perplexity.ai/search/rye-abc"
    chunk = chunks_of(path, "Rye")[0].model_copy(update={"source_url": address})
    fact = Fact(
        text=QUOTE, chunk_id=chunk.id, quote=QUOTE, quote_start=chunk.text.index(QUOTE), source_title="Rye"
    )

    citation = cite(1, fact, Candidate(chunk=chunk))

    assert citation.source_url == address and citation.verified
    assert evidence_for(citation, [tmp_path]).thread_url == address
