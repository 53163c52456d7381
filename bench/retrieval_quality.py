"""Retrieval quality on a BEIR-format set: nDCG@10 and Recall@100 for each leg and for the pipeline.

Run: ``PYTHONPATH=. python bench/retrieval_quality.py --dataset ../shared/eval/pyfaq-dev``

The corpus is written out as one text file per document (so the ripgrep leg has real files to
search), chunked and embedded exactly as the indexer does, and stored in LanceDB under a cache
folder keyed by the corpus hash and the chunking settings: later runs reuse it instead of
re-embedding. Results are scored per document (a document ranks where its best chunk ranks).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import lancedb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from services.indexer.loaders import LoadedDocument  # noqa: E402
from services.indexer.pipeline import build_chunks, passage_for_embedding  # noqa: E402
from shared.contracts import Chunk, Document, SourceKind  # noqa: E402
from shared.embedding import OnnxEmbedder  # noqa: E402
from shared.settings import Settings  # noqa: E402
from shared.stores.lancedb_store import CHUNKS, DOCUMENTS, LanceDBStore, chunk_row  # noqa: E402

DEFAULT_DATASET = REPO.parent / "shared" / "eval" / "pyfaq-dev"
DEFAULT_CACHE = Path(os.environ.get("HINDSIGHT_BENCH_CACHE", "/tmp/hindsight-bench"))
WRITE_BATCH_DOCUMENTS = 400


@dataclass
class Dataset:
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    digest: str


def load_dataset(folder: Path) -> Dataset:
    corpus_bytes = (folder / "corpus.jsonl").read_bytes()
    corpus = {row["_id"]: row for row in map(json.loads, corpus_bytes.decode().splitlines()) if row}
    queries = {
        row["_id"]: row["text"]
        for row in map(json.loads, (folder / "queries.jsonl").read_text().splitlines())
    }
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels.tsv").read_text().splitlines()[1:]:
        query_id, corpus_id, score = line.split("\t")
        qrels.setdefault(query_id, {})[corpus_id] = int(score)
    queries = {qid: text for qid, text in queries.items() if qid in qrels}
    return Dataset(corpus, queries, qrels, hashlib.sha256(corpus_bytes).hexdigest())


def file_name(document_id: str) -> str:
    return document_id.replace("/", "__") + ".txt"


def build_store(dataset: Dataset, cache: Path, embedder: OnnxEmbedder, settings: Settings) -> Path:
    """Write, chunk, embed and store the corpus once per (corpus, chunking, embedder)."""
    key = hashlib.sha256(
        f"{dataset.digest}:{settings.chunk_tokens}:{settings.chunk_overlap}:{embedder.name}".encode()
    ).hexdigest()[:16]
    folder = cache / key
    if (folder / "complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    files = folder / "files"
    files.mkdir(parents=True)
    store = LanceDBStore(folder / "store", embedder.dimension)
    database = lancedb.connect(str(folder / "store"))
    chunks_table, documents_table = database.open_table(CHUNKS), database.open_table(DOCUMENTS)
    ids = sorted(dataset.corpus)
    started = time.perf_counter()
    last = None
    for first in range(0, len(ids), WRITE_BATCH_DOCUMENTS):
        chunk_rows, document_rows = [], []
        for document_id in ids[first : first + WRITE_BATCH_DOCUMENTS]:
            document, chunks = corpus_document(dataset.corpus[document_id], files, embedder, settings)
            vectors = embedder.embed_documents([passage_for_embedding(chunk) for chunk in chunks])
            chunk_rows += [chunk_row(chunk, vector) for chunk, vector in zip(chunks, vectors, strict=True)]
            document_rows.append(manifest_row(document, len(chunks)))
            last = (document, chunks, vectors)
        if chunk_rows:
            chunks_table.add(chunk_rows)
        documents_table.add(document_rows)
        done = min(first + WRITE_BATCH_DOCUMENTS, len(ids))
        print(f"  embedded {done}/{len(ids)} documents ({time.perf_counter() - started:.0f} s)", flush=True)
    if last is not None:
        store.replace_document(*last)  # rewrites one document and builds the full-text index over all
    store.optimize()
    (folder / "complete").write_text(str(time.time()))
    return folder


def corpus_document(
    row: dict[str, str], files: Path, embedder: OnnxEmbedder, settings: Settings
) -> tuple[Document, list[Chunk]]:
    path = files / file_name(row["_id"])
    path.write_text(row["text"], encoding="utf-8")
    document = Document(
        id=row["_id"],
        source_uri=str(path),
        kind=SourceKind.TEXT,
        title=row["title"],
        content_hash=hashlib.sha256(row["text"].encode()).hexdigest(),
    )
    loaded = LoadedDocument(text=row["text"], title=row["title"], kind=SourceKind.TEXT)
    return document, build_chunks(document, loaded, embedder.token_spans, settings)


def manifest_row(document: Document, chunk_count: int) -> dict[str, object]:
    return {
        "document_id": document.id,
        "source_uri": document.source_uri,
        "content_hash": document.content_hash,
        "kind": document.kind.value,
        "title": document.title,
        "chunk_count": chunk_count,
        "indexed_at": time.time(),
        "metadata": "{}",
    }


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    gains = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:k]))
    return gains / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(settings.embedder_dir, settings.onnx_threads, settings.embed_batch_size)
    dataset = load_dataset(args.dataset)
    folder = build_store(dataset, args.cache_dir, embedder, settings)
    print(f"store ready at {folder}")


if __name__ == "__main__":
    main()
