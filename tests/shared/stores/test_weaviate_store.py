"""The Weaviate adapter without a server: schema, deterministic UUIDs, filters, query arguments and
how it writes (its behaviour as a store is the conformance suite's, ``test_store_conformance.py``).

A Weaviate server cannot run on this machine. The schema is checked through the client library's own
request builder (the JSON it would send to ``/v1/schema``); the store's writes are checked against
the in-memory stand-in of the client's collections (``weaviate_standin``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from weaviate.collections.classes.config import _CollectionConfigCreate
from weaviate.collections.classes.filters import _FilterAnd, _FilterOr, _FilterValue

from shared.contracts import Chunk, Document, SearchFilters, SourceKind
from shared.stores.weaviate_store import (
    BM25_PROPERTIES,
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
from tests.shared.stores.weaviate_standin import StandInClient


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
    assert chunks_col.batches == docs_col.batches == 1
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
    assert chunks_col.batches == 1, "a refused replace writes nothing"


def test_rejected_objects_raise_with_weaviates_reason() -> None:
    client = StandInClient()
    store = WeaviateStore(client, "C")
    client.by_name["C"].batch.failed_objects.append(SimpleNamespace(message="vector lengths don't match"))
    document = Document(id="d", source_uri="/x.md", kind=SourceKind.MARKDOWN, title="x", content_hash="h")
    with pytest.raises(WeaviateStoreError, match="vector lengths"):
        store.replace_document(document, [make_chunk(0, "d")], np.ones((1, 4), dtype=np.float32))
