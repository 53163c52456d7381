"""The embedded store stays correct across its periodic compactions, which also delete old versions."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from shared.contracts import Chunk, Document, SourceKind
from shared.stores import lancedb_store
from shared.stores.lancedb_store import LanceDBStore

DIMENSION = 8


def document(number: int, words: list[str]) -> tuple[Document, list[Chunk]]:
    uri = f"/notes/{number}.md"
    doc = Document(id=f"doc{number}", source_uri=uri, kind=SourceKind.MARKDOWN, title=f"note {number}",
                   content_hash="-".join(words))  # fmt: skip
    chunks = [
        Chunk(
            id=f"doc{number}:{i}",
            document_id=doc.id,
            ordinal=i,
            text=word,
            char_start=0,
            char_end=len(word),
            title=doc.title,
            source_uri=uri,
            kind=SourceKind.MARKDOWN,
        )
        for i, word in enumerate(words)
    ]
    return doc, chunks


def write(store: LanceDBStore, number: int, words: list[str]) -> None:
    doc, chunks = document(number, words)
    vectors = np.random.default_rng(number).random((len(chunks), DIMENSION), dtype=np.float32)
    store.replace_document(doc, chunks, vectors)


def test_replaces_and_deletes_stay_exact_across_compactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lancedb_store, "COMPACT_EVERY_WRITES", 7)
    store = LanceDBStore(tmp_path, DIMENSION)
    for number in range(40):
        write(store, number, [f"alpha{number}", f"beta{number}", f"gamma{number}"])
    for number in range(0, 40, 2):
        write(store, number, [f"delta{number}"])
    for number in range(1, 40, 10):
        store.delete_document(f"doc{number}")

    manifest = store.manifest()
    assert len(manifest) == 36
    assert store.count_chunks() == 20 * 1 + 16 * 3
    assert manifest["/notes/4.md"].chunk_count == 1 and manifest["/notes/4.md"].content_hash == "delta4"
    assert [c.text for c in store.document_chunks("doc4", [0, 1, 2])] == ["delta4"]
    assert store.document_chunks("doc11", [0, 1, 2]) == []
    assert [hit.chunk.id for hit in store.keyword_search("delta6", 5)] == ["doc6:0"]
    assert store.keyword_search("alpha6", 5) == []


def test_batched_replaces_stay_exact_across_compactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lancedb_store, "COMPACT_EVERY_WRITES", 3)
    store = LanceDBStore(tmp_path, DIMENSION)

    def write_batch(numbers: range, words_of: Callable[[int], list[str]]) -> None:
        pairs = [document(number, words_of(number)) for number in numbers]
        chunks = [chunk for _, chunk_list in pairs for chunk in chunk_list]
        vectors = np.random.default_rng(len(chunks)).random((len(chunks), DIMENSION), dtype=np.float32)
        store.replace_documents([doc for doc, _ in pairs], chunks, vectors)

    for first in range(0, 40, 8):
        write_batch(range(first, first + 8), lambda n: [f"alpha{n}", f"beta{n}", f"gamma{n}"])
    write_batch(range(0, 40, 2), lambda n: [f"delta{n}"] if n % 4 else [])
    write_batch(range(0, 40, 2), lambda n: [f"delta{n}"] if n % 4 else [])  # a redelivered batch

    manifest = store.manifest()
    assert len(manifest) == 40
    assert store.count_chunks() == 20 * 3 + 10 * 1
    assert manifest["/notes/6.md"].chunk_count == 1 and manifest["/notes/6.md"].content_hash == "delta6"
    assert manifest["/notes/4.md"].chunk_count == 0 and store.document_chunks("doc4", [0, 1, 2]) == []
    assert [c.text for c in store.document_chunks("doc5", [0, 1, 2])] == ["alpha5", "beta5", "gamma5"]
    assert [hit.chunk.id for hit in store.keyword_search("delta6", 5)] == ["doc6:0"]
    assert store.keyword_search("alpha6", 5) == []


def unindexed_rows(store: LanceDBStore) -> int:
    table = store._chunks  # the index statistics are LanceDB's own, not part of the store's interface
    (index,) = [i for i in table.list_indices() if lancedb_store.SEARCH_COLUMN in i.columns]
    return int(table.index_stats(index.name).num_unindexed_rows)


def test_refresh_indexes_brings_every_written_row_into_the_full_text_index(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path / "store", DIMENSION)
    for number in range(4):
        write(store, number, [f"alpha{number}", f"beta{number}"])
    assert unindexed_rows(store) == 6, "rows after the first write wait for the next compaction"
    store.refresh_indexes()
    assert unindexed_rows(store) == 0
    assert [hit.chunk.id for hit in store.keyword_search("beta3", 5)] == ["doc3:1"]


def chunk_data_files(root: Path) -> int:
    return len(list((root / f"{lancedb_store.CHUNKS}.lance" / "data").glob("*")))


@pytest.mark.parametrize("retention", [timedelta(milliseconds=1), timedelta(days=7)], ids=["1ms", "7days"])
def test_compaction_deletes_only_the_files_of_versions_older_than_the_retention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retention: timedelta
) -> None:
    monkeypatch.setattr(lancedb_store, "KEEP_OLD_VERSIONS", retention)
    store = LanceDBStore(tmp_path, DIMENSION)
    for revision in range(3):
        for number in range(10):
            write(store, number, [f"rev{revision}x{number}"])
    files_before = chunk_data_files(tmp_path)
    time.sleep(0.01)
    store.refresh_indexes()

    if retention < timedelta(seconds=1):
        assert chunk_data_files(tmp_path) == 1, "only the compacted file of the latest version"
        assert len(store._chunks.list_versions()) <= 2, "the compaction and its index update"
    else:
        assert chunk_data_files(tmp_path) == files_before + 1, "old versions kept, plus the compacted one"
    assert store.count_chunks() == 10
    assert [hit.chunk.id for hit in store.keyword_search("rev2x7", 5)] == ["doc7:0"]
    assert store.keyword_search("rev1x7", 5) == []
