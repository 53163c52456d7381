"""Dump every retrieval leg of a BEIR set once, so fusion and dense-scoring rules can be compared offline.

Run: ``PYTHONPATH=. python bench/retrieval_legs.py bench/sets/debian-faq ... [--chunk-tokens 200
--chunk-overlap 40]`` (``bench/retrieval_sweep.py`` runs it for the sets it is given).

Each set is indexed by the product's indexer exactly as ``bench/retrieval_quality.py`` does (same
cache, keyed by the chunking settings), then for every question it records, next to the store:

- every chunk's stored (int8) vector, document and ordinal, so the dense leg can be
  recomputed over the whole store with any document-scoring rule (the store's search is exhaustive
  cosine, so this is the same ranking);
- the question embedded by the product's int8 embedder and by sentence-transformers in fp32 (the
  same packaged weights, the same 256-token truncation);
- the BM25 leg (the store's full-text search, 200 deep) and the exact leg (ripgrep for the rules
  plan's hard keywords, at the product's ``POOL_EXACT`` files);
- the whole-document fp32 reference's vector for every document.

The dump is a pickle next to the store, named for the set's questions and judgements (sets may
share a corpus, hence a store); ``bench/retrieval_sweep.py`` reads it.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
from pathlib import Path

import lancedb
import numpy as np

from bench.retrieval_quality import DEFAULT_CACHE, index_corpus, load_dataset, whole_document_reference
from services.retriever.exact import ExactSearcher, find_rg
from services.retriever.keywords import StoreIdf
from services.retriever.planner import rule_based_plan
from shared.embedding import OnnxEmbedder
from shared.interfaces import Hit
from shared.settings import Settings

BM25_DEPTH = 200


def leg_rows(hits: list[Hit], index: dict[str, int]) -> list[tuple[int, float]]:
    """(chunk number, score) for each hit, in the leg's order."""
    return [(index[hit.chunk.id], hit.score) for hit in hits]


def dump_set(folder: Path, cache: Path, settings: Settings, embedder: OnnxEmbedder) -> Path:
    """Index the set (or reuse its cached store) and dump its legs once; the dump's path."""
    dataset = load_dataset(folder)
    corpus = index_corpus(dataset, cache, embedder, settings)
    questions = hashlib.sha256((folder / "queries.jsonl").read_bytes() + (folder / "qrels.tsv").read_bytes())
    out = corpus.folder / f"legs-{questions.hexdigest()[:16]}.pkl"  # sets may share a corpus
    if out.exists():
        print(f"{folder.name}: {out} (cached)", flush=True)
        return out
    table = lancedb.connect(str(corpus.folder / "store")).open_table("chunks").to_arrow()
    rows = table.select(["id", "source_uri", "ordinal", "vector"]).to_pylist()
    index = {row["id"]: number for number, row in enumerate(rows)}
    files = [Path(row["source_uri"]).name for row in rows]
    vectors = np.array([row["vector"] for row in rows], dtype=np.float32)
    reference = whole_document_reference(corpus)
    query_ids = sorted(dataset.queries)
    texts = [dataset.queries[q] for q in query_ids]
    idf = StoreIdf(corpus.store)
    exact = ExactSearcher(corpus.store, find_rg(settings.retrieval.rg_path))
    bm25: list[list[tuple[int, float]]] = []
    exact_legs: dict[int, list[list[tuple[int, float]]]] = {settings.retrieval.pool_exact: []}
    keywords: list[list[str]] = []
    for text in texts:
        plan = rule_based_plan(text, idf, settings.retrieval.exact_max_keywords)
        keywords.append(plan.hard_keywords)
        bm25.append(leg_rows(corpus.store.keyword_search(text, BM25_DEPTH), index))
        exact_hits = exact.search(plan.hard_keywords, settings.retrieval.pool_exact)
        exact_legs[settings.retrieval.pool_exact].append(leg_rows(exact_hits, index))
    dump = {
        "set": folder.name,
        "chunk_tokens": settings.indexing.chunk_tokens,
        "chunk_overlap": settings.indexing.chunk_overlap,
        "files": files,
        "file_to_id": corpus.file_to_id,
        "ordinals": np.array([row["ordinal"] for row in rows]),
        "vectors": vectors,
        "query_ids": query_ids,
        "queries": texts,
        "qrels": dataset.qrels,
        "q_int8": np.array([embedder.embed_query(t) for t in texts]),
        "q_fp32": reference.model.encode(texts, normalize_embeddings=True),
        "bm25": bm25,
        "exact": exact_legs,
        "keywords": keywords,
        "reference_names": reference.names,
        "reference_vectors": reference.vectors,
    }
    out.write_bytes(pickle.dumps(dump))
    print(f"{folder.name}: {len(rows)} chunks, {len(texts)} queries -> {out}", flush=True)
    return out


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("dataset_dirs", nargs="+", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--chunk-tokens", type=int, default=None)
    parser.add_argument("--chunk-overlap", type=int, default=None)
    args = parser.parse_args()
    settings = Settings()
    update = {"chunk_tokens": args.chunk_tokens, "chunk_overlap": args.chunk_overlap}
    settings = settings.replace(**{k: v for k, v in update.items() if v is not None})
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    for folder in args.dataset_dirs:
        dump_set(folder, args.cache_dir, settings, embedder)


if __name__ == "__main__":
    main()
