"""The Weaviate adapter without a server: schema, deterministic UUIDs, filters, query arguments and
how it writes (its behaviour as a store is the conformance suite's, ``test_store_conformance.py``).

A Weaviate server cannot run on this machine. The schema is checked through the client library's own
request builder (the JSON it would send to ``/v1/schema``); the store's writes are checked against
the in-memory stand-in of the client's collections (``weaviate_standin``), whose BM25F scores and
dimension checks are held here to what Weaviate 1.28 does.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from weaviate.classes.data import DataObject
from weaviate.collections.classes.config import _CollectionConfigCreate
from weaviate.collections.classes.filters import _FilterAnd, _FilterOr, _FilterValue

from shared.contracts import Chunk, Document, SearchFilters, SourceKind
from shared.stores.weaviate_store import (
    BM25_PROPERTIES,
    MANIFEST_DESCRIPTION,
    WeaviateStore,
    WeaviateStoreError,
    bm25_query,
    build_filters,
    chunk_collection_config,
    chunk_properties,
    chunk_uuid,
    dense_query,
    document_uuid,
    manifest_collection_config,
    properties_chunk,
)
from tests.shared.stores.weaviate_standin import K1, StandInClient, StandInCollection


def make_chunk(ordinal: int, document_id: str = "doc_1") -> Chunk:
    text = f"chunk number {ordinal}"
    return Chunk(
        id=f"{document_id}:{ordinal}",
        document_id=document_id,
        ordinal=ordinal,
        text=text,
        heading_path=["Bread", "Starter"],
        page=2,
        char_start=10 * ordinal,
        char_end=10 * ordinal + len(text),
        title="Bread notes",
        source_uri="/notes/bread.md",
        kind=SourceKind.MARKDOWN,
        space="Baking",
        document_date=datetime(2026, 4, 11, 18, 5, tzinfo=UTC),
    )


def leaves(filters: Any) -> list[tuple[str, str, Any]]:
    parts = filters.filters if isinstance(filters, _FilterAnd) else [filters]
    assert all(isinstance(p, _FilterValue) for p in parts)
    return [(p.target, p.operator.value, p.value) for p in parts]


def test_chunk_schema_has_no_vectorizer_cosine_hnsw_and_bm25_on_text_title_headings() -> None:
    schema = _CollectionConfigCreate(**chunk_collection_config("HindsightChunk"))._to_dict()
    assert schema["class"] == "HindsightChunk"
    assert schema["vectorConfig"]["default"]["vectorizer"] == {"none": {}}
    assert schema["vectorConfig"]["default"]["vectorIndexConfig"]["distance"] == "cosine"
    assert "multiTenancyConfig" not in schema or not schema["multiTenancyConfig"].get("enabled")
    properties = {p["name"]: p for p in schema["properties"]}
    for searchable in ("text", "title", "heading_path"):
        assert properties[searchable]["indexSearchable"] is True
        assert properties[searchable]["tokenization"] == "word"
    for exact in ("chunk_id", "document_id", "source_uri", "kind", "space"):
        assert properties[exact]["tokenization"] == "field"
        assert properties[exact]["indexSearchable"] is False
    assert properties["heading_path"]["dataType"] == ["text[]"]
    assert properties["document_date"]["dataType"] == ["date"]
    assert {"ordinal", "page", "char_start", "char_end"} <= set(properties)


def test_manifest_lives_in_a_sibling_collection_of_the_configured_name() -> None:
    schema = _CollectionConfigCreate(**manifest_collection_config("Notes"))._to_dict()
    assert schema["class"] == "NotesDocument"
    assert {p["name"] for p in schema["properties"]} >= {"document_id", "source_uri", "content_hash"}


def test_uuids_are_deterministic_per_chunk_and_distinct_between_chunks_and_documents() -> None:
    assert chunk_uuid("doc_1:0") == chunk_uuid("doc_1:0")
    assert chunk_uuid("doc_1:0") != chunk_uuid("doc_1:1")
    assert document_uuid("doc_1") != chunk_uuid("doc_1")
    assert chunk_uuid("doc_1:0")[14] == "5", "a UUIDv5, so every process derives the same id"


def test_filters_become_one_and_of_exact_weaviate_conditions() -> None:
    filters = SearchFilters(
        kinds=[SourceKind.PDF, SourceKind.MARKDOWN],
        spaces=["Retrieval"],
        path_prefix="/notes/",
        date_from=datetime(2024, 1, 1),
        date_to=datetime(2025, 1, 1, tzinfo=UTC),
    )
    assert leaves(build_filters(filters)) == [
        ("kind", "ContainsAny", ["pdf", "markdown"]),
        ("space", "ContainsAny", ["Retrieval"]),
        ("source_uri", "Like", "/notes/*"),
        ("document_date", "GreaterThanEqual", datetime(2024, 1, 1, tzinfo=UTC)),
        ("document_date", "LessThanEqual", datetime(2025, 1, 1, tzinfo=UTC)),
    ]
    assert build_filters(SearchFilters()) is None
    assert build_filters(None) is None
    assert leaves(build_filters(SearchFilters(spaces=["A"]))) == [("space", "ContainsAny", ["A"])]


def test_dense_and_bm25_query_arguments() -> None:
    vector = np.array([0.5, 0.25], dtype=np.float64)
    dense = dense_query(vector, 7, SearchFilters(kinds=[SourceKind.PDF]))
    assert dense["near_vector"] == [0.5, 0.25] and dense["limit"] == 7
    assert dense["return_metadata"].distance is True
    assert leaves(dense["filters"]) == [("kind", "ContainsAny", ["pdf"])]
    keyword = bm25_query("cross encoder", 5, None)
    assert keyword["query"] == "cross encoder" and keyword["limit"] == 5 and keyword["filters"] is None
    assert keyword["query_properties"] == BM25_PROPERTIES == ["text", "title^2", "heading_path"]
    assert keyword["return_metadata"].score is True
    assert "chunk_id" in keyword["return_properties"]


def test_chunk_properties_round_trip() -> None:
    chunk = make_chunk(3)
    properties = chunk_properties(chunk)
    assert properties["chunk_id"] == "doc_1:3" and properties["kind"] == "markdown"
    assert properties_chunk(properties) == chunk


def test_replace_upserts_by_uuid_drops_stale_ordinals_then_writes_the_manifest() -> None:
    client = StandInClient()
    store = WeaviateStore(client, "HindsightChunk")
    assert list(client.by_name) == ["HindsightChunk", "HindsightChunkDocument"]
    chunks_col, docs_col = client.by_name["HindsightChunk"], client.by_name["HindsightChunkDocument"]
    document = Document(
        id="doc_1", source_uri="/notes/bread.md", kind=SourceKind.MARKDOWN, title="Bread", content_hash="abc"
    )
    store.replace_document(document, [make_chunk(0), make_chunk(1)], np.ones((2, 4), dtype=np.float32))
    assert list(chunks_col.objects) == [chunk_uuid("doc_1:0"), chunk_uuid("doc_1:1")]
    assert chunks_col.objects[chunk_uuid("doc_1:0")][1] == [1.0, 1.0, 1.0, 1.0]
    stale = [("document_id", "Equal", "doc_1"), ("ordinal", "GreaterThanEqual", 2)]
    assert leaves(chunks_col.deletes[0]) == stale
    manifest_row, _ = docs_col.objects[document_uuid("doc_1")]
    assert (manifest_row["content_hash"], manifest_row["chunk_count"]) == ("abc", 2)

    store.delete_document("doc_1")
    assert leaves(chunks_col.deletes[-1]) == [("document_id", "Equal", "doc_1")]
    assert leaves(docs_col.deletes[-1]) == [("document_id", "Equal", "doc_1")]


def test_a_batch_of_documents_is_one_client_batch_one_stale_delete_and_one_manifest_batch() -> None:
    client = StandInClient()
    store = WeaviateStore(client, "C")
    chunks_col, docs_col = client.by_name["C"], client.by_name["CDocument"]
    documents = [
        Document(id=i, source_uri=f"/notes/{i}.md", kind=SourceKind.MARKDOWN, title=i, content_hash=f"h{i}")
        for i in ("d1", "d2", "empty")
    ]
    chunks = [make_chunk(0, "d1"), make_chunk(1, "d1"), make_chunk(0, "d2")]
    store.replace_documents(documents, chunks, np.ones((3, 4), dtype=np.float32))
    assert chunks_col.inserts == docs_col.inserts == [3], "one insert_many each, no fixed-size batch"
    assert list(chunks_col.objects) == [chunk_uuid(c.id) for c in chunks]
    assert len(chunks_col.deletes) == 1 and isinstance(chunks_col.deletes[0], _FilterOr)
    assert [leaves(part) for part in chunks_col.deletes[0].filters] == [
        [("document_id", "Equal", "d1"), ("ordinal", "GreaterThanEqual", 2)],
        [("document_id", "Equal", "d2"), ("ordinal", "GreaterThanEqual", 1)],
        [("document_id", "Equal", "empty"), ("ordinal", "GreaterThanEqual", 0)],
    ]
    rows = {uuid: row["chunk_count"] for uuid, (row, _) in docs_col.objects.items()}
    assert rows == {document_uuid("d1"): 2, document_uuid("d2"): 1, document_uuid("empty"): 0}

    with pytest.raises(ValueError, match="belongs to no document"):
        store.replace_documents(documents[:1], [make_chunk(0, "d2")], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="listed twice"):
        store.replace_documents([documents[0], documents[0]], [], np.ones((0, 4), dtype=np.float32))
    assert chunks_col.inserts == [3], "a refused replace writes nothing"


def test_a_large_replace_goes_in_insert_many_requests_of_the_batch_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("shared.stores.weaviate_store.BATCH_SIZE", 2)
    client = StandInClient()
    store = WeaviateStore(client, "C")
    document = Document(id="d", source_uri="/x.md", kind=SourceKind.MARKDOWN, title="x", content_hash="h")
    store.replace_document(
        document, [make_chunk(i, "d") for i in range(5)], np.ones((5, 4), dtype=np.float32)
    )
    assert client.by_name["C"].inserts == [2, 2, 1] and store.count_chunks() == 5


def bread_document(document_id: str = "d") -> Document:
    return Document(id=document_id, source_uri=f"/{document_id}.md", kind=SourceKind.MARKDOWN, title="x",
                    content_hash="h")  # fmt: skip


def test_a_vector_of_another_length_is_refused_on_write_with_the_servers_reason() -> None:
    """Weaviate's HNSW index takes the length of its first vector; the stand-in refuses like it."""
    store = WeaviateStore(StandInClient(), "C")
    store.replace_document(bread_document("a"), [make_chunk(0, "a")], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(WeaviateStoreError, match="new node has a vector with length 3"):
        store.replace_document(bread_document("b"), [make_chunk(0, "b")], np.ones((1, 3), dtype=np.float32))
    assert store.count_chunks() == 1


def test_a_query_vector_of_another_length_raises_the_stores_error_not_the_clients() -> None:
    store = WeaviateStore(StandInClient(), "C")
    store.replace_document(bread_document("a"), [make_chunk(0, "a")], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(WeaviateStoreError, match="vector lengths don't match: 3 vs 4") as raised:
        store.dense_search(np.ones(3, dtype=np.float32), 5)
    assert type(raised.value.__cause__).__name__ == "WeaviateQueryError"


def test_a_library_written_before_centroids_gets_them_once_when_opened() -> None:
    client = StandInClient()
    store = WeaviateStore(client, "C")
    vectors = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], dtype=np.float32)
    store.replace_document(bread_document("d"), [make_chunk(0, "d"), make_chunk(1, "d")], vectors)
    manifest = client.by_name["CDocument"]
    manifest.objects = {uuid: (row, None) for uuid, (row, _) in manifest.objects.items()}  # as written before
    manifest.description = "Hindsight manifest: one row per indexed file and the hash of its bytes"
    assert store.document_centroids(["d"]) == {}
    reopened = WeaviateStore(client, "C")
    np.testing.assert_allclose(reopened.document_centroids(["d"])["d"], [2**-0.5, 2**-0.5, 0, 0], atol=1e-6)
    assert manifest.inserts[-1] == 1 and manifest.description == MANIFEST_DESCRIPTION
    manifest.iterator = None  # type: ignore[assignment,method-assign]  # reading every row again would fail
    WeaviateStore(client, "C")
    assert len(manifest.inserts) == 2, "opened again: the description says the rows hold centroids"


def notes_corpus() -> StandInCollection:
    """The issue-35 case: one chunk whose text says "notes", nine with "Notes" only in their heading
    path, all with long texts and short titles."""
    collection = StandInCollection()
    filler = " ".join(f"word{i}" for i in range(40))
    rows = [{"text": f"{filler} notes", "title": "Kitchen", "heading_path": ["Kitchen", "Bread"]}]
    rows += [{"text": filler, "title": f"Trip {i}", "heading_path": [f"Trip {i}", "Notes"]} for i in range(9)]
    collection.data.insert_many(
        [DataObject(properties={"chunk_id": str(i), **row}, uuid=f"u{i}") for i, row in enumerate(rows)]
    )
    return collection


def bm25_ids(collection: StandInCollection, query: str) -> list[str]:
    result = collection.query.bm25(query=query, query_properties=BM25_PROPERTIES, limit=20)
    return [o.properties["chunk_id"] for o in result.objects]


def test_standin_bm25f_ranks_a_long_texts_mention_behind_short_heading_paths_as_weaviate_does() -> None:
    """Weaviate 1.28 ranked the chunk whose text says "notes" last, behind nine chunks with "Notes"
    only in their heading path: one BM25F over the properties normalises by the summed length of the
    properties holding the term, so a 41-word text weighs more than a 3-word heading path."""
    assert bm25_ids(notes_corpus(), "notes") == [str(i) for i in range(1, 10)] + ["0"]


def test_standin_bm25f_scores_are_weaviates_formula_and_stopwords_are_dropped_from_the_query() -> None:
    collection = notes_corpus()
    found = collection.query.bm25(query="the notes", query_properties=BM25_PROPERTIES, limit=20).objects
    scores = {o.properties["chunk_id"]: o.metadata.score for o in found}
    # Mean lengths: text 40.1 words, title 1.9, heading path 2.9; their mean is the norm.
    average = ((41 + 40 * 9) / 10 + (1 + 2 * 9) / 10 + (2 + 3 * 9) / 10) / 3
    idf = math.log(1 + (10 - 10 + 0.5) / (10 + 0.5))
    in_heading = idf * 1 / (1 + K1 * (1 - 0.75 + 0.75 * 3 / average))
    in_text = idf * 1 / (1 + K1 * (1 - 0.75 + 0.75 * 41 / average))
    assert scores["3"] == pytest.approx(in_heading) and scores["0"] == pytest.approx(in_text)
    repeated = collection.query.bm25(query="notes notes", query_properties=BM25_PROPERTIES, limit=1)
    assert repeated.objects[0].metadata.score == pytest.approx(2 * in_heading), "a repeated term: idf x 2"


def test_standin_bm25f_weights_a_title_match_by_its_boost_inside_the_one_frequency() -> None:
    collection = notes_corpus()
    (top,) = collection.query.bm25(query="kitchen", query_properties=BM25_PROPERTIES, limit=1).objects
    average = ((41 + 40 * 9) / 10 + (1 + 2 * 9) / 10 + (2 + 3 * 9) / 10) / 3
    idf = math.log(1 + (10 - 1 + 0.5) / (1 + 0.5))
    frequency, length = 2 * 1 + 1, 1 + 2  # title^2 and heading path hold it; their lengths add up
    assert top.metadata.score == pytest.approx(
        idf * frequency / (frequency + K1 * (1 - 0.75 + 0.75 * length / average))
    )
