"""The Weaviate adapter without a server: schema, deterministic UUIDs, filters and query arguments.

A Weaviate server cannot run on this machine. The schema is checked through the client library's own
request builder (the JSON it would send to ``/v1/schema``); the store's calls are checked against a
small recording stand-in of the client's collection objects.
"""

from __future__ import annotations

from contextlib import contextmanager
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


class RecordingCollection:
    """Records what the store asks of one collection; answers queries with ``objects``."""

    def __init__(self) -> None:
        self.added: list[dict[str, Any]] = []
        self.batches = 0
        self.deleted: list[Any] = []
        self.objects: list[Any] = []
        self.failed: list[Any] = []
        self.batch = SimpleNamespace(fixed_size=self._fixed_size, failed_objects=self.failed)
        self.data = SimpleNamespace(delete_many=lambda where: self.deleted.append(where))
        answer = SimpleNamespace(objects=self.objects)
        self.query = SimpleNamespace(
            near_vector=lambda **kw: answer, bm25=lambda **kw: answer, fetch_objects=lambda **kw: answer
        )

    @contextmanager
    def _fixed_size(self, batch_size: int) -> Any:
        self.batches += 1
        yield SimpleNamespace(add_object=lambda **kw: self.added.append(kw))

    def iterator(self, return_properties: list[str]) -> Any:
        return iter(self.objects)


class RecordingClient:
    def __init__(self) -> None:
        self.created: list[str] = []
        self.by_name: dict[str, RecordingCollection] = {}
        self.collections = SimpleNamespace(
            exists=lambda name: name in self.by_name,
            create=lambda **config: self._create(config),
            get=lambda name: self.by_name[name],
        )

    def _create(self, config: dict[str, Any]) -> None:
        self.created.append(config["name"])
        self.by_name[config["name"]] = RecordingCollection()


def test_replace_upserts_by_uuid_drops_stale_ordinals_then_writes_the_manifest() -> None:
    client = RecordingClient()
    store = WeaviateStore(client, "HindsightChunk")
    assert client.created == ["HindsightChunk", "HindsightChunkDocument"]
    chunks_col, docs_col = client.by_name["HindsightChunk"], client.by_name["HindsightChunkDocument"]
    document = Document(
        id="doc_1", source_uri="/notes/bread.md", kind=SourceKind.MARKDOWN, title="Bread", content_hash="abc"
    )
    store.replace_document(document, [make_chunk(0), make_chunk(1)], np.ones((2, 4), dtype=np.float32))
    assert [a["uuid"] for a in chunks_col.added] == [chunk_uuid("doc_1:0"), chunk_uuid("doc_1:1")]
    assert chunks_col.added[0]["vector"] == [1.0, 1.0, 1.0, 1.0]
    stale = [("document_id", "Equal", "doc_1"), ("ordinal", "GreaterThanEqual", 2)]
    assert leaves(chunks_col.deleted[0]) == stale
    manifest_row = docs_col.added[0]
    assert manifest_row["uuid"] == document_uuid("doc_1")
    assert manifest_row["properties"]["content_hash"] == "abc"
    assert manifest_row["properties"]["chunk_count"] == 2

    store.delete_document("doc_1")
    assert leaves(chunks_col.deleted[-1]) == [("document_id", "Equal", "doc_1")]
    assert leaves(docs_col.deleted[-1]) == [("document_id", "Equal", "doc_1")]


def test_a_batch_of_documents_is_one_client_batch_one_stale_delete_and_one_manifest_batch() -> None:
    client = RecordingClient()
    store = WeaviateStore(client, "C")
    chunks_col, docs_col = client.by_name["C"], client.by_name["CDocument"]
    documents = [
        Document(id=i, source_uri=f"/notes/{i}.md", kind=SourceKind.MARKDOWN, title=i, content_hash=f"h{i}")
        for i in ("d1", "d2", "empty")
    ]
    chunks = [make_chunk(0, "d1"), make_chunk(1, "d1"), make_chunk(0, "d2")]
    store.replace_documents(documents, chunks, np.ones((3, 4), dtype=np.float32))
    assert chunks_col.batches == docs_col.batches == 1
    assert [a["uuid"] for a in chunks_col.added] == [chunk_uuid(c.id) for c in chunks]
    assert len(chunks_col.deleted) == 1 and isinstance(chunks_col.deleted[0], _FilterOr)
    assert [leaves(part) for part in chunks_col.deleted[0].filters] == [
        [("document_id", "Equal", "d1"), ("ordinal", "GreaterThanEqual", 2)],
        [("document_id", "Equal", "d2"), ("ordinal", "GreaterThanEqual", 1)],
        [("document_id", "Equal", "empty"), ("ordinal", "GreaterThanEqual", 0)],
    ]
    rows = {row["uuid"]: row["properties"]["chunk_count"] for row in docs_col.added}
    assert rows == {document_uuid("d1"): 2, document_uuid("d2"): 1, document_uuid("empty"): 0}

    with pytest.raises(ValueError, match="belongs to no document"):
        store.replace_documents(documents[:1], [make_chunk(0, "d2")], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="listed twice"):
        store.replace_documents([documents[0], documents[0]], [], np.ones((0, 4), dtype=np.float32))
    assert chunks_col.batches == 1, "a refused replace writes nothing"


def test_rejected_objects_raise_with_weaviates_reason() -> None:
    client = RecordingClient()
    store = WeaviateStore(client, "C")
    client.by_name["C"].failed.append(SimpleNamespace(message="vector lengths don't match"))
    document = Document(id="d", source_uri="/x.md", kind=SourceKind.MARKDOWN, title="x", content_hash="h")
    with pytest.raises(WeaviateStoreError, match="vector lengths"):
        store.replace_document(document, [make_chunk(0, "d")], np.ones((1, 4), dtype=np.float32))


def test_search_results_map_back_to_chunks_with_scores_and_manifest_filters_by_root() -> None:
    client = RecordingClient()
    store = WeaviateStore(client, "C")
    chunk = make_chunk(0)
    client.by_name["C"].objects.append(
        SimpleNamespace(
            properties=chunk_properties(chunk), metadata=SimpleNamespace(distance=0.25, score=3.5)
        )
    )
    dense = store.dense_search(np.zeros(4), 5)
    assert dense[0].chunk == chunk and dense[0].score == pytest.approx(0.75)
    assert store.keyword_search("bread", 5)[0].score == pytest.approx(3.5)
    assert store.keyword_search("   ", 5) == []
    for uri in ("/notes/a.md", "/other/b.md"):
        row = {"document_id": uri, "source_uri": uri, "content_hash": "h", "chunk_count": 1}
        client.by_name["CDocument"].objects.append(SimpleNamespace(properties=row))
    assert list(store.manifest("/notes")) == ["/notes/a.md"]
    assert len(store.manifest()) == 2
