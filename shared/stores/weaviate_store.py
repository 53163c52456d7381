"""The production vector store: Weaviate (client v4), vectors supplied by Hindsight, BM25 on the text.

One tenant-free collection of chunks named by ``HINDSIGHT_WEAVIATE_COLLECTION`` and, beside it, a
``<name>Document`` collection holding the manifest, so the manifest lives with the chunks it
describes. Object UUIDs are UUIDv5 of the chunk id (and of the document id for manifest rows): a
re-index upserts the same objects instead of duplicating them, and the ordinals a shorter version
no longer has are deleted afterwards. A manifest row's vector is its document's centroid (the unit
mean of its chunks' vectors), computed when the document is written; rows written before that get
theirs once, when the store is opened.

Objects are written with ``data.insert_many`` (one gRPC batch request per ``BATCH_SIZE`` objects;
an object whose UUID exists is replaced, as in any Weaviate batch), not the client's
``batch.fixed_size``/``dynamic`` context managers: those flush from a background thread and, on a
real connection, each block costs about a second whatever its size (issue 35: ``replace_documents``
took ~2.1 s for one document; ``insert_many`` of one object 3 ms).

Every error of the client (a refused object, a vector of the wrong length, a dropped connection)
leaves the adapter as :class:`WeaviateStoreError`. The query builders are plain functions so they
can be tested without a server (Weaviate cannot run on the development machines).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlparse

import numpy as np
from weaviate.classes.config import Configure, DataType, Property, Tokenization, VectorDistances
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, MetadataQuery
from weaviate.collections.classes.filters import _Filters
from weaviate.exceptions import WeaviateBaseError
from weaviate.util import generate_uuid5

from shared.contracts import Chunk, Document, SearchFilters, SourceKind
from shared.interfaces import Hit, ManifestEntry, VectorStoreError
from shared.settings import StorageSettings
from shared.stores.records import (
    CHUNK_FIELDS,
    centroids,
    checked_query,
    checked_vectors,
    chunk_counts,
    manifest_record,
)

DOCUMENT_SUFFIX = "Document"
# The manifest collection's description says its rows hold centroids: one older manifest (created
# before they did) gets them once, then this description, so opening a store costs one config read.
MANIFEST_DESCRIPTION = (
    "Hindsight manifest: one row per indexed file, the hash of its bytes, its centroid as vector"
)
BM25_PROPERTIES = ["text", "title^2", "heading_path"]
BATCH_SIZE = 200
FETCH_PAGE = 1000  # chunk objects per fetch when reading whole documents
CHUNK_PROPERTIES = ["chunk_id", *CHUNK_FIELDS]
MANIFEST_PROPERTIES = ["document_id", "source_uri", "content_hash", "chunk_count"]


Row = DataObject[dict[str, Any], None]  # an object to write: properties, UUID and vector
Params = ParamSpec("Params")
Result = TypeVar("Result")


class WeaviateStoreError(VectorStoreError):
    """Weaviate refused a write or a query, or could not be reached; the message carries its reasons."""


def server_errors_wrapped(method: Callable[Params, Result]) -> Callable[Params, Result]:
    """``method`` with every error of the Weaviate client raised as :class:`WeaviateStoreError`."""

    @functools.wraps(method)
    def wrapped(*args: Params.args, **kwargs: Params.kwargs) -> Result:
        try:
            return method(*args, **kwargs)
        except WeaviateBaseError as exc:
            raise WeaviateStoreError(f"Weaviate refused {method.__name__}: {exc}") from exc

    return wrapped


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
            _keyword("source_url"),
            Property(
                name="turn_question", data_type=DataType.TEXT, index_searchable=False, skip_vectorization=True
            ),
        ],
    }


def manifest_collection_config(name: str) -> dict[str, Any]:
    """The manifest rows: one object per indexed file, its vector the document's centroid (read by id,
    never searched)."""
    return {
        "name": name + DOCUMENT_SUFFIX,
        "description": MANIFEST_DESCRIPTION,
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
    """An object's vector as the client returns it (the collection's unnamed vector is ``default``);
    empty for an object without one."""
    return list((vector.get("default") or []) if isinstance(vector, dict) else (vector or []))


def connect(settings: StorageSettings) -> Any:
    """A client of the configured server (HTTP and gRPC on the same host)."""
    import weaviate

    url = urlparse(settings.weaviate_url)
    secure = url.scheme == "https"
    return weaviate.connect_to_custom(
        http_host=url.hostname or "127.0.0.1",
        http_port=url.port or (443 if secure else 80),
        http_secure=secure,
        grpc_host=url.hostname or "127.0.0.1",
        grpc_port=settings.weaviate_grpc_port,
        grpc_secure=secure,
    )


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

    @server_errors_wrapped
    def __init__(self, client: Any, collection: str) -> None:
        self._client = client
        self._name = collection
        self._create_collections()
        if self._documents.config.get(simple=True).description != MANIFEST_DESCRIPTION:
            self._add_centroids()
            self._documents.config.update(description=MANIFEST_DESCRIPTION)

    @classmethod
    def from_settings(cls, settings: StorageSettings) -> WeaviateStore:
        try:
            client = connect(settings)
        except WeaviateBaseError as exc:
            raise WeaviateStoreError(f"Weaviate at {settings.weaviate_url} cannot be reached: {exc}") from exc
        return cls(client, settings.weaviate_collection)

    def _create_collections(self) -> None:
        for config in (chunk_collection_config(self._name), manifest_collection_config(self._name)):
            if not self._client.collections.exists(config["name"]):
                self._client.collections.create(**config)
        self._chunks = self._client.collections.get(self._name)
        self._documents = self._client.collections.get(self._name + DOCUMENT_SUFFIX)

    @server_errors_wrapped
    def replace_documents(self, documents: list[Document], chunks: list[Chunk], vectors: np.ndarray) -> None:
        """Upsert all chunks by their deterministic UUIDs, drop every document's ordinals past its new
        end in one delete, then upsert the manifest rows with their centroids: a crash in between
        leaves hash mismatches the next scan repairs."""
        counts = chunk_counts(documents, chunks)
        if not documents:
            return
        vectors = checked_vectors(vectors, len(chunks), None, "a write of chunk vectors")
        self._insert(
            self._chunks,
            [
                Row(properties=chunk_properties(chunk), uuid=chunk_uuid(chunk.id), vector=vector.tolist())
                for chunk, vector in zip(chunks, vectors, strict=True)
            ],
        )
        self._chunks.data.delete_many(where=stale_chunks_filter(counts))
        found = centroids([chunk.document_id for chunk in chunks], vectors)
        self._insert(
            self._documents,
            [
                Row(
                    properties=manifest_record(document, counts[document.id]),
                    uuid=document_uuid(document.id),
                    vector=found[document.id].tolist() if document.id in found else None,
                )
                for document in documents
            ],
        )

    def replace_document(self, document: Document, chunks: list[Chunk], vectors: np.ndarray) -> None:
        self.replace_documents([document], chunks, vectors)

    @server_errors_wrapped
    def delete_document(self, document_id: str) -> None:
        self._chunks.data.delete_many(where=Filter.by_property("document_id").equal(document_id))
        self._documents.data.delete_many(where=Filter.by_property("document_id").equal(document_id))

    @server_errors_wrapped
    def clear(self) -> None:
        """Delete both collections and create them again, empty."""
        self._client.collections.delete([self._name, self._name + DOCUMENT_SUFFIX])
        self._create_collections()

    @server_errors_wrapped
    def manifest(self, root: str | None = None) -> dict[str, ManifestEntry]:
        prefix = None if root is None else root.rstrip("/") + "/"
        entries = {}
        for obj in self._documents.iterator(return_properties=MANIFEST_PROPERTIES):
            entry = ManifestEntry.model_validate(obj.properties)
            if prefix is None or entry.source_uri.startswith(prefix):
                entries[entry.source_uri] = entry
        return entries

    @server_errors_wrapped
    def dense_search(self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None) -> list[Hit]:
        result = self._chunks.query.near_vector(**dense_query(checked_query(vector, None), limit, filters))
        return [
            Hit(chunk=properties_chunk(o.properties), score=1.0 - float(o.metadata.distance or 0.0))
            for o in result.objects
        ]

    @server_errors_wrapped
    def keyword_search(self, query: str, limit: int, filters: SearchFilters | None = None) -> list[Hit]:
        if not query.strip():
            return []
        result = self._chunks.query.bm25(**bm25_query(query, limit, filters))
        return [
            Hit(chunk=properties_chunk(o.properties), score=float(o.metadata.score or 0.0))
            for o in result.objects
        ]

    def manifest_version(self) -> None:
        """Weaviate keeps no version of a collection: readers read the manifest each time."""
        return None

    def keyword_count(self, query: str, limit: int) -> int:
        """The server ranks and sends the hits either way: counted from :meth:`keyword_search`."""
        return len(self.keyword_search(query, limit))

    @server_errors_wrapped
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

    @server_errors_wrapped
    def documents_chunks(self, document_ids: list[str]) -> dict[str, list[Chunk]]:
        found: dict[str, list[Chunk]] = {}
        for stored in self._objects_of(self._chunks, document_ids, CHUNK_PROPERTIES, with_vectors=False):
            chunk = properties_chunk(stored.properties)
            found.setdefault(chunk.document_id, []).append(chunk)
        return {document_id: sorted(chunks, key=lambda c: c.ordinal) for document_id, chunks in found.items()}

    @server_errors_wrapped
    def document_centroids(self, document_ids: list[str]) -> dict[str, np.ndarray]:
        """The manifest rows' vectors: one fetch of one object per document."""
        found = {}
        for stored in self._objects_of(self._documents, document_ids, ["document_id"], with_vectors=True):
            centroid = stored_vector(stored.vector)
            if centroid:
                found[stored.properties["document_id"]] = np.asarray(centroid, dtype=np.float32)
        return found

    def _add_centroids(self) -> None:
        """Manifest rows with chunks but no vector (written before rows held centroids) get their
        centroid, computed from their chunks (once: the caller then marks the manifest)."""
        missing = {
            obj.properties["document_id"]: obj
            for obj in self._documents.iterator(include_vector=True)
            if obj.properties.get("chunk_count") and not stored_vector(obj.vector)
        }
        owners: list[str] = []
        rows: list[list[float]] = []
        for stored in self._objects_of(self._chunks, list(missing), ["document_id"], with_vectors=True):
            owners.append(stored.properties["document_id"])
            rows.append(stored_vector(stored.vector))
        found = centroids(owners, np.asarray(rows, dtype=np.float32)) if rows else {}
        self._insert(
            self._documents,
            [
                Row(properties=missing[d].properties, uuid=missing[d].uuid, vector=found[d].tolist())
                for d in found
            ],
        )

    def _objects_of(
        self, collection: Any, document_ids: list[str], properties: list[str], with_vectors: bool
    ) -> Iterator[Any]:
        """Every object of ``collection`` of the listed documents, fetched ``FETCH_PAGE`` at a time."""
        if not document_ids:
            return
        where = Filter.by_property("document_id").contains_any(list(dict.fromkeys(document_ids)))
        offset = 0
        while True:
            result = collection.query.fetch_objects(
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

    @server_errors_wrapped
    def count_chunks(self) -> int:
        return int(self._chunks.aggregate.over_all(total_count=True).total_count or 0)

    def refresh_indexes(self) -> None:
        """Nothing to do: Weaviate indexes each object (vector and BM25) as it is written."""

    def close(self) -> None:
        self._client.close()

    @staticmethod
    def _insert(collection: Any, objects: list[Row]) -> None:
        """Upsert ``objects`` with ``insert_many``, ``BATCH_SIZE`` a request (module doc); raise with
        Weaviate's first reasons if it rejects any."""
        for start in range(0, len(objects), BATCH_SIZE):
            result = collection.data.insert_many(objects[start : start + BATCH_SIZE])
            if result.has_errors:
                errors = list(result.errors.values())
                reasons = "; ".join(str(error.message) for error in errors[:3])
                raise WeaviateStoreError(f"{len(errors)} objects rejected by Weaviate: {reasons}")
