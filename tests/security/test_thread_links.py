"""N10: only a perplexity.ai address in a file's front matter becomes the cited thread's link; any
other (a planted ``url:`` leading to a phishing page under the thread's name) is dropped.

The note's front matter is the exporter's own shape (``services.scraper.markdown``: ``url`` of the
thread on www.perplexity.ai), with the address replaced by the red team's."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.gateway.evidence import evidence_for
from shared.contracts import Citation

QUOTE = "Rye needs a longer proof than wheat."


def cited_thread(library: Path, url: str) -> str | None:
    note = library / "Rye (rye-proof).md"
    note.write_text(
        f'---\ntitle: Rye\nurl: "{url}"\nspace: Baking\n---\n\n## How long does rye proof?\n\n{QUOTE}\n'
    )
    start = note.read_text().index(QUOTE)
    citation = Citation(
        number=1, document_id="d", chunk_id="d:0", title="Rye", source_uri=str(note),
        char_start=start, char_end=start + len(QUOTE), quote=QUOTE,
    )  # fmt: skip
    evidence = evidence_for(citation, [library])
    assert evidence.located and evidence.turn_question == "How long does rye proof?"
    return evidence.thread_url


@pytest.mark.parametrize(
    "url",
    [
        "https://www.perplexity.ai/search/how-long-does-rye-proof-abc123",
        "https://perplexity.ai/search/abc",
    ],
)
def test_a_perplexity_address_is_the_threads_link(library: Path, url: str) -> None:
    assert cited_thread(library, url) == url


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/search/how-long-does-rye-proof",
        "https://www.perplexity.ai.evil.example/search/abc",
        "https://www.perplexity.ai@evil.example/search/abc",
        "https://user:pw@www.perplexity.ai/search/abc",
        "https://www.perplexity.ai:8443/search/abc",
        "http://www.perplexity.ai/search/abc",
        "javascript:alert(1)//www.perplexity.ai",
        "https://evilperplexity.ai/search/abc",
    ],
)
def test_any_other_address_is_not_a_link(library: Path, url: str) -> None:
    assert cited_thread(library, url) is None
