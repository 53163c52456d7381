"""The production vector store: Weaviate (client v4), vectors supplied by Hindsight, BM25 on the text.

One tenant-free collection of chunks named by ``HINDSIGHT_WEAVIATE_COLLECTION`` and, beside it, a
``<name>Document`` collection holding the manifest, so the manifest lives with the chunks it
describes. Object UUIDs are UUIDv5 of the chunk id (and of the document id for manifest rows): a
re-index upserts the same objects instead of duplicating them, and the ordinals a shorter version
no longer has are deleted afterwards; a batch of documents goes in one client batch. The query
builders are plain functions so they can be tested without a server (Weaviate cannot run on the
development machines).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

import numpy as np
from weaviate.classes.config import Configure, DataType, Property, Tokenization, VectorDistances
from weaviate.classes.query import Filter, MetadataQuery
from weaviate.collections.classes.filters import _Filters
from weaviate.util import generate_uuid5

from shared.contracts import Chunk, Document, SearchFilters, SourceKind
from shared.interfaces import Hit, ManifestEntry
from shared.settings import Settings
from shared.stores.records import CHUNK_FIELDS, centroids, chunk_counts, manifest_record

DOCUMENT_SUFFIX = "Document"
BM25_PROPERTIES = ["text", "title^2", "heading_path"]
BATCH_SIZE = 200
FETCH_PAGE = 1000  # chunk objects per fetch when reading whole documents
CHUNK_PROPERTIES = ["chunk_id", *CHUNK_FIELDS]
MANIFEST_PROPERTIES = ["document_id", "source_uri", "content_hash", "chunk_count"]


class WeaviateStoreError(RuntimeError):
    """Weaviate rejected objects of a batch; the message carries its first reasons."""


def _keyword(name: str) -> Property:
    """An exact-match, filterable string (ids, paths, kinds): one token, not searchable by BM25."""
    return Property(
        name=name,
        data_type=DataType.TEXT,
        tokenization=Tokenization.FIELD,
        index_filterable=True,
        index_searchable=False,
        skip_vectorization=True,
    )


def _searchable(name: str, data_type: DataType = DataType.TEXT) -> Property:
    return Property(
        name=name,
        data_type=data_type,
        tokenization=Tokenization.WORD,
        index_searchable=True,
        skip_vectorization=True,
    )


def chunk_collection_config(name: str) -> dict[str, Any]:
    """``collections.create`` arguments for the chunks: our own cosine vectors, BM25 on text and title."""
    return {
        "name": name,
        "description": "Hindsight chunks: spans of documents' extracted text",
        "vector_config": Configure.Vectors.self_provided(
            vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE)
        ),
        "inverted_index_config": Configure.inverted_index(bm25_k1=1.2, bm25_b=0.75),
        "properties": [
            _keyword("chunk_id"),
            _keyword("document_id"),
            Property(name="ordinal", data_type=DataType.INT),
            _searchable("text"),
            _searchable("title"),
            _searchable("heading_path", DataType.TEXT_ARRAY),
            Property(name="page", data_type=DataType.INT),
            Property(name="char_start", data_type=DataType.INT),
            Property(name="char_end", data_type=DataType.INT),
            _keyword("source_uri"),
            _keyword("kind"),
            _keyword("space"),
            Property(name="document_date", data_type=DataType.DATE),
            Property(name="body_start", data_type=DataType.INT),
        ],
    }


def manifest_collection_config(name: str) -> dict[str, Any]:
    """The manifest rows: one object per indexed file, no vectors searched."""
    return {
        "name": name + DOCUMENT_SUFFIX,
        "description": "Hindsight manifest: one row per indexed file and the hash of its bytes",
        "vector_config": Configure.Vectors.self_provided(),
        "properties": [
            _keyword("document_id"),
            _keyword("source_uri"),
            _keyword("content_hash"),
            _keyword("kind"),
            Property(name="title", data_type=DataType.TEXT, index_searchable=False),
            Property(name="chunk_count", data_type=DataType.INT),
            Property(name="indexed_at", data_type=DataType.NUMBER),
            Property(name="metadata", data_type=DataType.TEXT, index_searchable=False),
        ],
    }


def chunk_uuid(chunk_id: str) -> str:
    return str(generate_uuid5(chunk_id, "hindsight-chunk"))


def document_uuid(document_id: str) -> str:
    return str(generate_uuid5(document_id, "hindsight-document"))


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def build_filters(filters: SearchFilters | None) -> _Filters | None:
    """The Weaviate filter for ``filters``, applied inside the vector and BM25 searches."""
    if filters is None:
        return None
    parts: list[_Filters] = []
    if filters.kinds:
        parts.append(Filter.by_property("kind").contains_any([k.value for k in filters.kinds]))
    if filters.spaces:
        parts.append(Filter.by_property("space").contains_any(list(filters.spaces)))
    if filters.path_prefix:
        parts.append(Filter.by_property("source_uri").like(filters.path_prefix + "*"))
    if filters.date_from:
        parts.append(Filter.by_property("document_date").greater_or_equal(_utc(filters.date_from)))
    if filters.date_to:
        parts.append(Filter.by_property("document_date").less_or_equal(_utc(filters.date_to)))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Filter.all_of(parts)


def dense_query(vector: np.ndarray, limit: int, filters: SearchFilters | None) -> dict[str, Any]:
    """``query.near_vector`` arguments."""
    return {
        "near_vector": vector.astype(np.float32).tolist(),
        "limit": limit,
        "filters": build_filters(filters),
        "return_metadata": MetadataQuery(distance=True),
        "return_properties": CHUNK_PROPERTIES,
    }


def stored_vector(vector: Any) -> list[float]:
    """An object's vector as the client returns it: the collection's unnamed vector is ``default``."""
    return list(vector["default"] if isinstance(vector, dict) else vector)


def bm25_query(query: str, limit: int, filters: SearchFilters | None) -> dict[str, Any]:
    """``query.bm25`` arguments: the text, the title (weighted double) and the heading path."""
    return {
        "query": query,
        "query_properties": BM25_PROPERTIES,
        "limit": limit,
        "filters": build_filters(filters),
        "return_metadata": MetadataQuery(score=True),
        "return_properties": CHUNK_PROPERTIES,
    }


def stale_chunks_filter(counts: dict[str, int]) -> _Filters:
    """The chunks of each document with an ordinal its new version (of ``counts[id]`` chunks) no
    longer has."""
    parts = [
        Filter.all_of(
            [
                Filter.by_property("document_id").equal(document_id),
                Filter.by_property("ordinal").greater_or_equal(keep),
            ]
        )
        for document_id, keep in counts.items()
    ]
    return parts[0] if len(parts) == 1 else Filter.any_of(parts)


def chunk_properties(chunk: Chunk) -> dict[str, Any]:
    values = chunk.model_dump(include=set(CHUNK_PROPERTIES) - {"chunk_id"})
    values["chunk_id"] = chunk.id
    values["kind"] = chunk.kind.value
    values["document_date"] = _utc(chunk.document_date) if chunk.document_date else None
    return values


def properties_chunk(properties: dict[str, Any]) -> Chunk:
    values = {key: properties.get(key) for key in CHUNK_PROPERTIES if key != "chunk_id"}
    values["id"] = properties["chunk_id"]
    values["heading_path"] = list(values["heading_path"] or [])
    values["kind"] = SourceKind(str(values["kind"]))
    return Chunk.model_validate(values)


class WeaviateStore:
    """:class:`shared.interfaces.VectorStore` on a Weaviate server."""

    def __init__(self, client: Any, collection: str) -> None:
        self._client = client
        for config in (chunk_collection_config(collection), manifest_collection_config(collection)):
            if not client.collections.exists(config["name"]):
                client.collections.create(**config)
        self._chunks = client.collections.get(collection)
        self._documents = client.collections.get(collection + DOCUMENT_SUFFIX)

    @classmethod
    def from_settings(cls, settings: Settings) -> WeaviateStore:
        import weaviate

        url = urlparse(settings.weaviate_url)
        secure = url.scheme == "https"
        client = weaviate.connect_to_custom(
            http_host=url.hostname or "127.0.0.1",
            http_port=url.port or (443 if secure else 80),
            http_secure=secure,
            grpc_host=url.hostname or "127.0.0.1",
            grpc_port=settings.weaviate_grpc_port,
            grpc_secure=secure,
        )
        return cls(client, settings.weaviate_collection)

    def replace_documents(self, documents: list[Document], chunks: list[Chunk], vectors: np.ndarray) -> None:
        """Upsert all chunks by their deterministic UUIDs in one client batch, drop every document's
        ordinals past its new end in one delete, then write the manifest rows in one batch: a crash
        in between leaves hash mismatches the next scan repairs."""
        counts = chunk_counts(documents, chunks)
        if not documents:
            return
        with self._chunks.batch.fixed_size(batch_size=BATCH_SIZE) as batch:
            for chunk, vector in zip(chunks, vectors, strict=True):
                batch.add_object(
                    properties=chunk_properties(chunk),
                    uuid=chunk_uuid(chunk.id),
                    vector=vector.astype(np.float32).tolist(),
                )
        self._raise_failed(self._chunks)
        self._chunks.data.delete_many(where=stale_chunks_filter(counts))
        with self._documents.batch.fixed_size(batch_size=BATCH_SIZE) as batch:
            for document in documents:
                batch.add_object(
                    properties=manifest_record(document, counts[document.id]),
                    uuid=document_uuid(document.id),
                )
        self._raise_failed(self._documents)

    def replace_document(self, document: Document, chunks: list[Chunk], vectors: np.ndarray) -> None:
        self.replace_documents([document], chunks, vectors)

    def delete_document(self, document_id: str) -> None:
        self._chunks.data.delete_many(where=Filter.by_property("document_id").equal(document_id))
        self._documents.data.delete_many(where=Filter.by_property("document_id").equal(document_id))

    def manifest(self, root: str | None = None) -> dict[str, ManifestEntry]:
        prefix = None if root is None else root.rstrip("/") + "/"
        entries = {}
        for obj in self._documents.iterator(return_properties=MANIFEST_PROPERTIES):
            entry = ManifestEntry.model_validate(obj.properties)
            if prefix is None or entry.source_uri.startswith(prefix):
                entries[entry.source_uri] = entry
        return entries

    def dense_search(self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None) -> list[Hit]:
        result = self._chunks.query.near_vector(**dense_query(vector, limit, filters))
        return [
            Hit(chunk=properties_chunk(o.properties), score=1.0 - float(o.metadata.distance or 0.0))
            for o in result.objects
        ]

    def keyword_search(self, query: str, limit: int, filters: SearchFilters | None = None) -> list[Hit]:
        if not query.strip():
            return []
        result = self._chunks.query.bm25(**bm25_query(query, limit, filters))
        return [
            Hit(chunk=properties_chunk(o.properties), score=float(o.metadata.score or 0.0))
            for o in result.objects
        ]

    def document_chunks(self, document_id: str, ordinals: list[int]) -> list[Chunk]:
        if not ordinals:
            return []
        where = Filter.all_of(
            [
                Filter.by_property("document_id").equal(document_id),
                Filter.by_property("ordinal").contains_any([int(o) for o in ordinals]),
            ]
        )
        result = self._chunks.query.fetch_objects(
            filters=where, limit=len(ordinals), return_properties=CHUNK_PROPERTIES
        )
        return sorted((properties_chunk(o.properties) for o in result.objects), key=lambda c: c.ordinal)

    def documents_chunks(self, document_ids: list[str]) -> dict[str, list[Chunk]]:
        found: dict[str, list[Chunk]] = {}
        for stored in self._objects_of(document_ids, CHUNK_PROPERTIES, with_vectors=False):
            chunk = properties_chunk(stored.properties)
            found.setdefault(chunk.document_id, []).append(chunk)
        return {document_id: sorted(chunks, key=lambda c: c.ordinal) for document_id, chunks in found.items()}

    def document_centroids(self, document_ids: list[str]) -> dict[str, np.ndarray]:
        owners: list[str] = []
        rows: list[list[float]] = []
        for stored in self._objects_of(document_ids, ["document_id"], with_vectors=True):
            owners.append(stored.properties["document_id"])
            rows.append(stored_vector(stored.vector))
        return centroids(owners, np.asarray(rows, dtype=np.float32)) if rows else {}

    def _objects_of(
        self, document_ids: list[str], properties: list[str], with_vectors: bool
    ) -> Iterator[Any]:
        """Every chunk object of the listed documents, fetched ``FETCH_PAGE`` at a time."""
        if not document_ids:
            return
        where = Filter.by_property("document_id").contains_any(list(dict.fromkeys(document_ids)))
        offset = 0
        while True:
            result = self._chunks.query.fetch_objects(
                filters=where,
                limit=FETCH_PAGE,
                offset=offset,
                include_vector=with_vectors,
                return_properties=properties,
            )
            yield from result.objects
            offset += len(result.objects)
            if len(result.objects) < FETCH_PAGE:
                return

    def count_chunks(self) -> int:
        return int(self._chunks.aggregate.over_all(total_count=True).total_count or 0)

    def refresh_indexes(self) -> None:
        """Nothing to do: Weaviate indexes each object (vector and BM25) as it is written."""

    def close(self) -> None:
        self._client.close()

    @staticmethod
    def _raise_failed(collection: Any) -> None:
        failed = collection.batch.failed_objects
        if failed:
            reasons = "; ".join(str(f.message) for f in failed[:3])
            raise WeaviateStoreError(f"{len(failed)} objects rejected by Weaviate: {reasons}")
