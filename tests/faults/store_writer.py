"""A process that writes to a LanceDB store without end, for the crash tests to SIGKILL at any moment.

``python -m tests.faults.store_writer STORE_DIR COMPACT_EVERY SEED``: each write replaces a few of
``DOCUMENTS`` documents in one batch, or deletes one; compaction (with version cleanup) runs every
``COMPACT_EVERY`` writes instead of the product's fifty, so kills land in it too. Every chunk's text and
its document's content hash name the write ("w<n>"), so a reader can tell a document whose chunks come
from two writes, or whose manifest row names another write than its chunks.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np

import shared.stores.lancedb_store as lancedb_store
from shared.contracts import Chunk, Document, SourceKind

DIMENSION = 8
DOCUMENTS = 20
MAX_CHUNKS = 6


def document_uri(number: int) -> str:
    return f"/library/doc-{number}.md"


def written_document(number: int, write: str, chunk_count: int) -> tuple[Document, list[Chunk]]:
    document = Document(
        id=f"doc-{number}",
        source_uri=document_uri(number),
        kind=SourceKind.MARKDOWN,
        title=f"Document {number}",
        content_hash=write,
        metadata={},
    )
    chunks = [
        Chunk(
            id=f"{document.id}:{ordinal}",
            document_id=document.id,
            ordinal=ordinal,
            text=write,
            char_start=0,
            char_end=len(write),
            title=document.title,
            source_uri=document.source_uri,
            kind=document.kind,
        )
        for ordinal in range(chunk_count)
    ]
    return document, chunks


def write_forever(store_dir: Path, compact_every: int, seed: int) -> None:
    lancedb_store.COMPACT_EVERY_WRITES = compact_every
    store = lancedb_store.LanceDBStore(store_dir, DIMENSION)
    rng = random.Random(seed)
    for write in range(sys.maxsize):
        if rng.random() < 0.2:
            store.delete_document(f"doc-{rng.randrange(DOCUMENTS)}")
            continue
        documents, chunks = [], []
        for number in rng.sample(range(DOCUMENTS), 4):
            chunk_count = rng.randint(1, MAX_CHUNKS)
            document, document_chunks = written_document(number, f"s{seed}w{write}", chunk_count)
            documents.append(document)
            chunks += document_chunks
        store.replace_documents(documents, chunks, np.ones((len(chunks), DIMENSION), dtype=np.float32))


if __name__ == "__main__":
    write_forever(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
