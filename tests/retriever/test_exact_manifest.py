"""The exact leg keeps the manifest's searched files between questions while the store's manifest
version stays, and reads them again after any write: a file indexed by another process (here: the
indexer's own scan through a second store handle on the same folder) is found at the next search.
Real files, the real indexer, a real LanceDB store, real ripgrep."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.indexer.pipeline import sync_root
from services.retriever.exact import ExactSearcher, find_rg
from shared.contracts import IndexRequest
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from tests.conftest import require_embedder

FILLER = "Notes on sourdough: flour, water, salt and time, folded every half hour. " * 6


def index(docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings, job: str) -> None:
    report = sync_root(
        IndexRequest(job_id=job, root=str(docs)), store, embedder, settings.indexing, settings.data_dir
    )
    assert report.failed == 0


def test_the_exact_leg_reads_the_manifest_once_per_version_and_finds_a_file_indexed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "levain.md").write_text(FILLER + "\n\nFeed the LEVAINX starter twice a day.\n")
    settings = Settings(data_dir=tmp_path / "data", models_dir=require_embedder(), roots=[docs])
    embedder = OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2", threads=1)
    indexer_store = LanceDBStore(settings.store_dir, embedder.dimension)
    index(docs, indexer_store, embedder, settings, "first")

    retriever_store = LanceDBStore(settings.store_dir, embedder.dimension)
    reads: list[int] = []
    read_manifest = retriever_store.manifest
    monkeypatch.setattr(retriever_store, "manifest", lambda root=None: reads.append(1) or read_manifest(root))
    exact = ExactSearcher(retriever_store, find_rg())
    for _ in range(3):
        assert [Path(hit.chunk.source_uri).name for hit in exact.search(["LEVAINX"], 10)] == ["levain.md"]
    assert len(reads) == 1, "three searches of an unchanged store read its manifest once"

    (docs / "crumb.md").write_text(FILLER + "\n\nAn open CRUMBQ needs a wetter dough.\n")
    index(docs, indexer_store, embedder, settings, "second")
    assert [Path(hit.chunk.source_uri).name for hit in exact.search(["CRUMBQ"], 10)] == ["crumb.md"]
    assert len(reads) == 2, "the write moved the manifest version: read again, once"
