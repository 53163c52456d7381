"""The embedded store stays correct across its periodic compactions, which also delete old versions,
and a library written before manifest rows held centroids gets them once, when opened."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lancedb
import numpy as np
import pytest

from shared.contracts import Chunk, Document, SearchFilters, SourceKind
from shared.stores import lancedb_store
from shared.stores.lancedb_store import LanceDBStore, cleanup_age

DIMENSION = 384  # the embedder's: LanceDB treats long fixed-size lists as vectors (nulls refused unless said)


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


def test_cleanup_age_deletes_versions_replaced_long_ago_and_keeps_the_one_replaced_just_now() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    created = [now - timedelta(hours=3), now - timedelta(hours=2), now - timedelta(hours=1)]
    age = cleanup_age(created, now, timedelta(minutes=10))
    deleted = [moment for moment in created if moment < now - age]
    assert deleted == created[:2], "the hour-old version was current until now: a query may be reading it"
    assert cleanup_age([now - timedelta(minutes=5)], now, timedelta(minutes=10)) == timedelta(minutes=10)


def test_compaction_deletes_old_versions_but_not_the_one_a_running_query_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lancedb_store, "KEEP_OLD_VERSIONS", timedelta(seconds=0.5))
    store = LanceDBStore(tmp_path, DIMENSION)
    for revision in range(3):
        if revision == 2:
            time.sleep(1.0)  # the versions holding rev0's rows are replaced long before the compaction
        for number in range(10):
            write(store, number, [f"rev{revision}x{number}"])
    time.sleep(1.0)  # every version is now older than the retention, as after an idle day
    current = lancedb.connect(str(tmp_path)).open_table(lancedb_store.CHUNKS).version
    files_before = chunk_data_files(tmp_path)
    store.refresh_indexes()

    assert chunk_data_files(tmp_path) <= files_before - 10, "rev0's files went with their versions"
    reader = lancedb.connect(str(tmp_path)).open_table(lancedb_store.CHUNKS)
    reader.checkout(current)  # a query that found this version current just before the compaction
    assert sorted(reader.to_arrow().column("text").to_pylist()) == [f"rev2x{n}" for n in range(10)]
    assert store.count_chunks() == 10
    assert [hit.chunk.id for hit in store.keyword_search("rev2x7", 5)] == ["doc7:0"]
    assert store.keyword_search("rev1x7", 5) == []


def test_a_library_written_before_centroids_gets_them_once_when_opened(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path, DIMENSION)
    for number in range(3):
        write(store, number, [f"alpha{number}", f"beta{number}"])
    store.replace_documents([document(9, [])[0]], [], np.zeros((0, DIMENSION)))
    expected = store.document_centroids(["doc0", "doc1", "doc2", "doc9"])
    database = lancedb.connect(str(tmp_path))  # rewrite the manifest as an older version wrote it
    old_rows = database.open_table(lancedb_store.DOCUMENTS).to_arrow().drop_columns([lancedb_store.CENTROID])
    database.create_table(lancedb_store.DOCUMENTS, data=old_rows, mode="overwrite")

    reopened = LanceDBStore(tmp_path, DIMENSION)
    found = reopened.document_centroids(["doc0", "doc1", "doc2", "doc9"])
    assert set(found) == set(expected) == {"doc0", "doc1", "doc2"}, "a document without chunks has none"
    for document_id, centroid in expected.items():
        np.testing.assert_allclose(found[document_id], centroid, atol=1e-6)
    assert len(reopened.manifest()) == 4 and reopened.manifest()["/notes/9.md"].chunk_count == 0
    version = database.open_table(lancedb_store.DOCUMENTS).version
    LanceDBStore(tmp_path, DIMENSION)
    assert database.open_table(lancedb_store.DOCUMENTS).version == version, "opened again: nothing rewritten"


# The vector index -------------------------------------------------------------------------------

INDEX_FROM = 400  # rows from which the test stores index their vectors (the product's: 20,000)


def clustered_library(
    store: LanceDBStore, documents: int, first: int = 0, space: str = "Notes"
) -> np.ndarray:
    """``documents`` documents of 10 chunks whose vectors lie around 40 topics, as text embeddings do;
    written in batches, then compacted. The vectors, in write order."""
    rng = np.random.default_rng(first)
    topics = np.random.default_rng(7).standard_normal((40, DIMENSION)).astype(np.float32)
    written = []
    for batch_start in range(first, first + documents, 20):
        last = min(batch_start + 20, first + documents)
        batch = [document(n, [f"w{n}-{i}" for i in range(10)]) for n in range(batch_start, last)]
        docs = [doc for doc, _ in batch]
        chunks = [c.model_copy(update={"space": space}) for _, cs in batch for c in cs]
        vectors = topics[rng.integers(0, 40, len(chunks))] + 0.3 * rng.standard_normal(
            (len(chunks), DIMENSION)
        )
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        store.replace_documents(docs, chunks, vectors)
        written.append(vectors)
    store.refresh_indexes()
    return np.concatenate(written)


def vector_indexes(path: Path) -> list[str]:
    table = lancedb.connect(str(path)).open_table(lancedb_store.CHUNKS)
    return [index.name for index in table.list_indices() if "vector" in index.columns]


LARGE = 900  # documents of 10 chunks: 128 partitions, more than a search probes (ANN_NPROBES)


def test_a_library_past_the_threshold_is_searched_through_its_index_and_finds_what_the_exact_scan_finds(
    tmp_path: Path,
) -> None:
    store = LanceDBStore(tmp_path, DIMENSION, vector_index_min_rows=INDEX_FROM)
    vectors = clustered_library(store, LARGE)

    assert vector_indexes(tmp_path) == [f"{lancedb_store.VECTOR_INDEX_PREFIX}128"], "√9000 → 128 partitions"
    assert lancedb_store.ANN_NPROBES < 128
    queries = vectors[::97]
    exact = [set(np.argsort(-(vectors @ q))[:50].tolist()) for q in queries]
    found = [
        {int(h.chunk.document_id[3:]) * 10 + h.chunk.ordinal for h in store.dense_search(q, 50)}
        for q in queries
    ]
    recall = np.mean([len(e & f) / 50 for e, f in zip(exact, found, strict=True)])
    assert recall >= 0.95, f"recall@50 of the index against the exact scan: {recall:.3f}"


def test_a_narrow_filter_on_an_indexed_library_still_gets_every_matching_chunk(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path, DIMENSION, vector_index_min_rows=INDEX_FROM)
    directions = np.random.default_rng(5).standard_normal((8, DIMENSION)).astype(np.float32)
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    for space, direction in enumerate(directions):  # eight small spaces of ten chunks, one direction each
        doc, chunks = document(5000 + space, [f"small-{i}" for i in range(10)])
        small = [c.model_copy(update={"space": f"Small {space}"}) for c in chunks]
        store.replace_document(doc, small, np.tile(direction, (10, 1)))
    clustered_library(store, LARGE)  # the index is trained on all of it, the small spaces included

    # Each space's chunks sit in the partition farthest from its question, which the first probes miss.
    for space, direction in enumerate(directions):
        hits = store.dense_search(-direction, 20, SearchFilters(spaces=[f"Small {space}"]))
        assert sorted(h.chunk.id for h in hits) == [f"doc{5000 + space}:{i}" for i in range(10)], space


def test_the_index_is_trained_again_when_the_library_grows_fourfold_and_only_the_new_one_stays(
    tmp_path: Path,
) -> None:
    store = LanceDBStore(tmp_path, DIMENSION, vector_index_min_rows=INDEX_FROM)
    clustered_library(store, 40)
    assert vector_indexes(tmp_path) == [f"{lancedb_store.VECTOR_INDEX_PREFIX}16"]
    clustered_library(store, 10, first=40)  # 500 rows: new rows join the 16-partition index
    table = lancedb.connect(str(tmp_path)).open_table(lancedb_store.CHUNKS)
    stats = table.index_stats(f"{lancedb_store.VECTOR_INDEX_PREFIX}16")
    assert stats is not None and (stats.num_indexed_rows, stats.num_unindexed_rows) == (500, 0)
    clustered_library(store, 10, first=50)  # 600 rows: past 512, trained again in 32 partitions
    assert vector_indexes(tmp_path) == [f"{lancedb_store.VECTOR_INDEX_PREFIX}32"]


def test_partitions_are_about_the_square_root_of_the_rows_in_powers_of_two() -> None:
    assert [lancedb_store.vector_index_partitions(n) for n in (20_000, 100_000, 1_000_000)] == [
        128,
        256,
        1024,
    ]


def test_the_manifest_version_moves_with_every_write_another_handle_makes(tmp_path: Path) -> None:
    reader, writer = LanceDBStore(tmp_path, DIMENSION), LanceDBStore(tmp_path, DIMENSION)
    seen = [reader.manifest_version()]
    write(writer, 1, ["alpha"])
    seen.append(reader.manifest_version())
    write(writer, 1, ["beta"])  # the same document again: its row is rewritten
    seen.append(reader.manifest_version())
    writer.delete_document("doc1")
    seen.append(reader.manifest_version())
    assert len(set(seen)) == 4, f"a write went unseen by the other handle: versions {seen}"
    assert reader.manifest_version() == seen[-1], "reading changes nothing"


def test_chunks_are_read_by_document_through_a_btree_that_misses_none_written_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lancedb_store, "COMPACT_EVERY_WRITES", 5)
    store = LanceDBStore(tmp_path, DIMENSION)
    write(store, 0, ["alpha0", "beta0"])
    indexes = {index.columns[0]: index.index_type for index in store._chunks.list_indices()}
    assert indexes.get("document_id") == "BTree", indexes
    for number in range(1, 8):  # some folded into the B-tree at the compaction, the last ones not yet
        write(store, number, [f"alpha{number}", f"beta{number}"])
    write(store, 3, ["gamma3"])  # replaced after the compaction
    store.delete_document("doc5")
    found = store.documents_chunks([f"doc{number}" for number in range(8)])
    assert {document: [c.text for c in chunks] for document, chunks in found.items()} == {
        **{f"doc{n}": [f"alpha{n}", f"beta{n}"] for n in (0, 1, 2, 4, 6, 7)},
        "doc3": ["gamma3"],
    }
    assert [c.text for c in store.document_chunks("doc7", [1])] == ["beta7"]


def test_a_library_written_before_the_btree_gets_it_when_opened(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path, DIMENSION)
    write(store, 0, ["alpha0", "beta0"])
    store._chunks.drop_index("document_id_idx")  # as a library written by an earlier version has none
    assert "document_id" not in {i.columns[0] for i in store._chunks.list_indices()}
    reopened = LanceDBStore(tmp_path, DIMENSION)
    assert "document_id" in {i.columns[0] for i in reopened._chunks.list_indices()}
    assert [c.text for c in reopened.documents_chunks(["doc0"])["doc0"]] == ["alpha0", "beta0"]
