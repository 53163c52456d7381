"""Question-side cost of ``VectorStore.document_centroids`` on a LanceDB library of a few thousand chunks.

Run: ``PYTHONPATH=. python bench/store_centroids.py [--documents 400 --chunks-per-document 10]``.
To compare with the code before centroids were stored, run the same script with the older
``shared/`` first on the path (``git archive <commit> shared | tar -x -C /tmp/base``, then
``PYTHONPATH=/tmp/base:. python bench/store_centroids.py``): it only uses the store's interface.

Each dense leg of a question asks for the centroids of the documents of its ``--pool`` hits, and a
question runs up to ``--legs`` dense legs (variations and HyDE). The library is written in batches
of 20 documents through ``replace_documents`` into a fresh temporary store; chunk vectors are seeded
random unit vectors (the read's cost depends on the number and length of vectors, not on what they
mean) and the texts are short generated sentences. Printed: the store's code, its size, the time to
write it, and per ``document_centroids`` call and per question (``--legs`` calls) p50/p95/mean in ms;
where the store keeps centroids, also the one-time cost of opening a library written without them.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import lancedb
import numpy as np

import shared
from shared.contracts import Chunk, Document, SourceKind
from shared.stores import lancedb_store
from shared.stores.lancedb_store import LanceDBStore

WRITE_BATCH = 20


def build(store: LanceDBStore, documents: int, per_document: int, dimension: int, seed: int) -> float:
    """Write the library; the seconds it took."""
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    for first in range(0, documents, WRITE_BATCH):
        batch = [library_document(number) for number in range(first, min(first + WRITE_BATCH, documents))]
        chunks = [chunk for document in batch for chunk in document_chunks(document, per_document)]
        vectors = rng.standard_normal((len(chunks), dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.replace_documents(batch, chunks, vectors)
    store.refresh_indexes()
    return time.perf_counter() - started


def library_document(number: int) -> Document:
    return Document(id=f"doc{number}", source_uri=f"/library/thread-{number}.md", kind=SourceKind.MARKDOWN,
                    title=f"Thread {number}", content_hash=f"h{number}")  # fmt: skip


def document_chunks(document: Document, count: int) -> list[Chunk]:
    texts = [
        f"{document.title}: answer paragraph {ordinal} about topic {ordinal * 7 % 13}"
        for ordinal in range(count)
    ]
    return [
        Chunk(
            id=f"{document.id}:{ordinal}",
            document_id=document.id,
            ordinal=ordinal,
            text=text,
            heading_path=[document.title],
            char_start=0,
            char_end=len(text),
            title=document.title,
            source_uri=document.source_uri,
            kind=document.kind,
        )
        for ordinal, text in enumerate(texts)
    ]


def percentiles(seconds: list[float]) -> str:
    ms = sorted(1000 * s for s in seconds)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"p50 {statistics.median(ms):7.2f}  p95 {p95:7.2f}  mean {statistics.fmean(ms):7.2f}"


def time_questions(store: LanceDBStore, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """Seconds per call and per question (``args.legs`` calls, each for ``args.pool`` hits' documents)."""
    rng = np.random.default_rng(args.seed + 1)
    calls: list[float] = []
    questions: list[float] = []
    for _ in range(args.questions):
        question = 0.0
        for _ in range(args.legs):
            hits = rng.integers(0, args.documents, size=args.pool)  # a hit's document, per hit
            started = time.perf_counter()
            found = store.document_centroids([f"doc{number}" for number in hits])
            elapsed = time.perf_counter() - started
            assert len(found) == len(set(hits.tolist())), "every hit's document has a centroid"
            calls.append(elapsed)
            question += elapsed
        questions.append(question)
    return calls, questions


def time_first_open_without_centroids(path: Path, dimension: int) -> float:
    """Rewrite the manifest as a library from before stored centroids, then time opening it."""
    database = lancedb.connect(str(path))
    rows = database.open_table(lancedb_store.DOCUMENTS).to_arrow()
    database.create_table(lancedb_store.DOCUMENTS, data=rows.drop_columns(["centroid"]), mode="overwrite")
    started = time.perf_counter()
    LanceDBStore(path, dimension)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument("--chunks-per-document", type=int, default=10)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--legs", type=int, default=5, help="dense legs per question")
    parser.add_argument("--pool", type=int, default=100, help="hits per dense leg")
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args()
    print(f"store code: {Path(shared.__file__).parent}")
    with tempfile.TemporaryDirectory(prefix="hindsight-centroids-") as folder:
        path = Path(folder) / "store"
        store = LanceDBStore(path, args.dimension)
        took = build(store, args.documents, args.chunks_per_document, args.dimension, args.seed)
        print(f"library: {args.documents} documents, {store.count_chunks()} chunks of {args.dimension} "
              f"dimensions, written in {took:.1f} s")  # fmt: skip
        store.document_centroids(["doc0"])  # the first read opens the table's files
        calls, questions = time_questions(store, args)
        print(f"document_centroids per call ({args.pool} hits), ms:     {percentiles(calls)}")
        print(f"document_centroids per question ({args.legs} legs), ms: {percentiles(questions)}")
        if hasattr(lancedb_store, "CENTROID"):
            opened = time_first_open_without_centroids(path, args.dimension)
            print(f"first open of a library written without centroids (computed once): {opened:.2f} s")


if __name__ == "__main__":
    main()
