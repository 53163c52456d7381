"""What every store keeps per chunk and per document, so the backends cannot drift apart."""

from __future__ import annotations

import json
import time
from typing import Any

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
