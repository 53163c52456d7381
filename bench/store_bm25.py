"""The keyword leg of each store on the BEIR sets: LanceDB's full-text BM25 against Weaviate 1.28's BM25F.

Run: ``PYTHONPATH=. python bench/store_bm25.py bench/sets/debian-faq bench/sets/r-faq ...``

Both stores get every corpus document as one chunk (title, text, no heading path) and answer each
question through ``VectorStore.keyword_search`` at depth 10. Weaviate's side is its adapter on the
test suite's stand-in of the server (``tests/shared/stores/weaviate_standin.py``), which scores as
Weaviate 1.28 does (one BM25F over text, title^2 and heading path; no stemming; English stopwords
dropped from the query only); LanceDB's is the real embedded store (one column of title, headings
and text; stemmed; stopwords dropped from both). No vector is searched, so the chunks' vectors are
seeded random. Printed per set: nDCG@10 and Recall@10 of each, and the mean share of each question's
first ten documents the two have in common.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import numpy as np

from bench.retrieval_quality import Dataset, load_dataset, ndcg_at, recall_at
from shared.contracts import Chunk, Document, SourceKind
from shared.interfaces import VectorStore
from shared.stores.lancedb_store import LanceDBStore
from shared.stores.weaviate_store import WeaviateStore
from tests.shared.stores.weaviate_standin import StandInClient

DEPTH = 10
DIMENSION = 8


def one_chunk_per_document(dataset: Dataset) -> tuple[list[Document], list[Chunk]]:
    documents, chunks = [], []
    for corpus_id, row in dataset.corpus.items():
        document = Document(id=corpus_id, source_uri=f"/corpus/{corpus_id}.md", kind=SourceKind.MARKDOWN,
                            title=row.get("title", ""), content_hash=corpus_id)  # fmt: skip
        documents.append(document)
        chunks.append(
            Chunk(
                id=f"{corpus_id}:0",
                document_id=corpus_id,
                ordinal=0,
                text=row["text"],
                char_start=0,
                char_end=len(row["text"]),
                title=document.title,
                source_uri=document.source_uri,
                kind=document.kind,
            )
        )
    return documents, chunks


def filled(store: VectorStore, dataset: Dataset) -> VectorStore:
    documents, chunks = one_chunk_per_document(dataset)
    vectors = np.random.default_rng(35).standard_normal((len(chunks), DIMENSION)).astype(np.float32)
    store.replace_documents(documents, chunks, vectors)
    store.refresh_indexes()
    return store


def ranked(store: VectorStore, query: str) -> list[str]:
    return [hit.chunk.document_id for hit in store.keyword_search(query, DEPTH)]


def compare(folder: Path, scratch: Path) -> None:
    dataset = load_dataset(folder)
    stores = {
        "lancedb BM25": filled(LanceDBStore(scratch / folder.name, DIMENSION), dataset),
        "weaviate BM25F": filled(WeaviateStore(StandInClient(), "Bm25"), dataset),
    }
    runs = {
        name: {qid: ranked(store, text) for qid, text in dataset.queries.items()}
        for name, store in stores.items()
    }
    print(f"{folder.name}: {len(dataset.corpus)} documents, {len(dataset.queries)} questions")
    for name, run in runs.items():
        ndcg = statistics.fmean(ndcg_at(run[q], dataset.qrels[q], DEPTH) for q in run)
        recall = statistics.fmean(recall_at(run[q], dataset.qrels[q], DEPTH) for q in run)
        print(f"  {name:15} nDCG@10 {ndcg:.3f}  Recall@10 {recall:.3f}")
    lance, weaviate = runs.values()
    shared_top = statistics.fmean(len(set(lance[q]) & set(weaviate[q])) / DEPTH for q in lance)
    print(f"  first ten documents in common: {shared_top:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hindsight-bm25-") as scratch:
        for folder in args.sets:
            compare(folder, Path(scratch))


if __name__ == "__main__":
    main()
