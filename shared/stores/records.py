"""What every store keeps per chunk and per document, so the backends cannot drift apart."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from shared.contracts import Chunk, Document
from shared.interfaces import VectorStoreError
from shared.vectors import refuse_degenerate

# Chunk fields a store persists and returns (everything but the id, which each backend names itself).
CHUNK_FIELDS = tuple(name for name in Chunk.model_fields if name != "id")


def manifest_record(document: Document, chunk_count: int) -> dict[str, Any]:
    """The manifest row of an indexed document: what the next scan compares the file against."""
    return {
        "document_id": document.id,
        "source_uri": document.source_uri,
        "content_hash": document.content_hash,
        "kind": document.kind.value,
        "title": document.title,
        "chunk_count": chunk_count,
        "indexed_at": time.time(),
        "metadata": json.dumps(document.metadata, sort_keys=True),
    }


def chunk_counts(documents: list[Document], chunks: list[Chunk]) -> dict[str, int]:
    """Chunks per document of a batched replace; refuses a document listed twice or a chunk of a
    document not listed, either of which would leave the manifest disagreeing with the chunks."""
    counts = dict.fromkeys((document.id for document in documents), 0)
    if len(counts) != len(documents):
        raise ValueError("a document is listed twice in one replace")
    for chunk in chunks:
        if chunk.document_id not in counts:
            raise ValueError(f"chunk {chunk.id} belongs to no document of this replace")
        counts[chunk.document_id] += 1
    return counts


def checked_vectors(vectors: np.ndarray, rows: int, dimension: int | None, source: str) -> np.ndarray:
    """``vectors`` as float32, once they are ``rows`` rows of ``dimension`` values (any length when
    ``None``: the server checks it) none of them degenerate; :class:`VectorStoreError` or
    :class:`DegenerateVectorsError` otherwise. ``source`` names them in the message."""
    array = np.asarray(vectors, dtype=np.float32)
    if rows == 0 and array.size == 0:  # a batch of documents without chunks: any empty array will do
        return array.reshape(0, dimension or 0)
    width = array.shape[-1] if array.ndim else 0
    if array.ndim != 2 or len(array) != rows or (dimension is not None and width != dimension):
        expected = f"({rows}, {dimension if dimension is not None else 'any'})"
        raise VectorStoreError(f"{source}: vectors of shape {array.shape}, the store takes {expected}")
    return refuse_degenerate(array, source)


def checked_query(vector: np.ndarray, dimension: int | None) -> np.ndarray:
    """A query vector as float32 once it has ``dimension`` values and is not degenerate."""
    return checked_vectors(np.asarray(vector).reshape(1, -1), 1, dimension, "a query vector")[0]


def centroids(document_ids: list[str], vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Each document's centroid from its chunks' vectors (row ``i`` belongs to ``document_ids[i]``):
    their mean, scaled to unit length."""
    found: dict[str, np.ndarray] = {}
    order = {document_id: number for number, document_id in enumerate(dict.fromkeys(document_ids))}
    if not order:
        return found
    sums = np.zeros((len(order), vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, [order[document_id] for document_id in document_ids], vectors)
    lengths = np.linalg.norm(sums, axis=1)
    for document_id, number in order.items():
        if lengths[number] > 0:
            found[document_id] = (sums[number] / lengths[number]).astype(np.float32)
    return found
