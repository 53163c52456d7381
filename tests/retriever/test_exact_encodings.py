"""The exact leg maps ripgrep's byte offsets into the text the indexer decoded (``shared.source_text``):
a Windows-1252 file, a UTF-8 file with a byte order mark and front matter. Real files indexed by the
indexer's own scan into a real LanceDB store, real ripgrep."""

from __future__ import annotations

from pathlib import Path

from services.indexer.pipeline import sync_root
from services.retriever.exact import ExactSearcher, find_rg
from shared.contracts import IndexRequest
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from tests.conftest import require_embedder

FILLER = "Notes on the café’s espresso machine, crème and brûlée included. " * 12


def test_a_match_in_a_windows_1252_file_and_after_a_bom_and_front_matter_is_credited_to_its_chunk(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cafe.txt").write_bytes((FILLER + "\n\nDescale with CITRICACID monthly.\n").encode("cp1252"))
    thread = (
        "---\ntitle: Grinder – réglages\n---\n" + FILLER + "\n\nSet the burrs to STEPSEVEN for ristretto.\n"
    )
    (docs / "grinder.md").write_bytes(b"\xef\xbb\xbf" + thread.encode())
    settings = Settings(
        data_dir=tmp_path / "data",
        models_dir=require_embedder(),
        roots=[docs],
        chunk_tokens=48,
        chunk_overlap=8,
    )
    embedder = OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2", threads=1)
    store = LanceDBStore(settings.store_dir, embedder.dimension)
    report = sync_root(
        IndexRequest(job_id="enc", root=str(docs)), store, embedder, settings.indexing, settings.data_dir
    )
    assert report.new == 2 and report.failed == 0

    exact = ExactSearcher(store, find_rg())
    for keyword, name in (("CITRICACID", "cafe.txt"), ("STEPSEVEN", "grinder.md")):
        hits = exact.search([keyword], 10)
        assert [Path(hit.chunk.source_uri).name for hit in hits] == [name]
        assert keyword in hits[0].chunk.text, "credited to the chunk that holds it, not a neighbour"
