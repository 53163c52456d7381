"""N10: only a perplexity.ai address in a file's front matter becomes the cited thread's link; any
other (a planted ``url:`` leading to a phishing page under the thread's name) is dropped.

The note's front matter is the exporter's own shape (``services.scraper.markdown``: ``url`` of the
thread on www.perplexity.ai, ``source: perplexity``), with the address replaced by the red team's. The
note is indexed by the real indexer, cited from its stored chunk the way the synthesizer cites, and
shown by the gateway's evidence view: the link can come from nowhere else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.gateway.evidence import evidence_for
from services.indexer.manifest_diff import document_id_for
from services.indexer.pipeline import sync_root
from shared.contracts import Citation, IndexRequest
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore

QUOTE = "Rye needs a longer proof than wheat."


def cited_thread(
    library: Path, url: str, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> str | None:
    note = library / "Rye (rye-proof).md"
    note.write_text(
        f'---\ntitle: Rye\nurl: "{url}"\nspace: Baking\nsource: perplexity\n---\n\n'
        f"# Rye\n\n## How long does rye proof?\n\n{QUOTE}\n"
    )
    sync_root(
        IndexRequest(job_id="links", root=str(library)), store, embedder, settings.indexing, settings.data_dir
    )
    (chunk,) = [c for c in store.document_chunks(document_id_for(str(note)), [0, 1]) if QUOTE in c.text]
    start = chunk.body_start + chunk.char_start + chunk.text.index(QUOTE)
    citation = Citation(
        number=1, document_id=chunk.document_id, chunk_id=chunk.id, title=chunk.title,
        source_uri=chunk.source_uri, char_start=start, char_end=start + len(QUOTE), quote=QUOTE,
        source_url=chunk.source_url, turn_question=chunk.turn_question, body_start=chunk.body_start,
    )  # fmt: skip
    evidence = evidence_for(citation, [library])
    assert evidence.located and evidence.turn_question == "How long does rye proof?"
    assert "source: perplexity" not in evidence.before, "the front matter is never shown as evidence"
    return evidence.thread_url


@pytest.mark.parametrize(
    "url",
    [
        "https://www.perplexity.ai/search/how-long-does-rye-proof-abc123",
        "https://perplexity.ai/search/abc",
    ],
)
def test_a_perplexity_address_is_the_threads_link(
    library: Path, url: str, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    assert cited_thread(library, url, store, embedder, settings) == url


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
def test_any_other_address_is_not_a_link(
    library: Path, url: str, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    assert cited_thread(library, url, store, embedder, settings) is None
