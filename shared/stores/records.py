"""What every store keeps per chunk and per document, so the backends cannot drift apart."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from shared.contracts import Chunk, Document

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
