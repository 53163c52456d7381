"""Speed suite: one table of figures and ratios, every ratio measured within this one run.

    PYTHONPATH=. python bench/speed_suite.py                        # everything
    PYTHONPATH=. python bench/speed_suite.py --only embedder,reranker

Sections (``--only`` takes a comma-separated subset):

* reranker:  pairs/s of the reranker worker (the stand-in cross-encoder in its served precision,
  questions of 20-64 candidates handed to its micro-batcher at once) vs
  sentence_transformers.CrossEncoder on the same weights, one ``predict`` per question.
* embedder:  texts/s of the product's OnnxEmbedder (int8) vs SentenceTransformer.encode (fp32) on the
  packaged all-MiniLM-L6-v2 weights it is exported from, on the same pyfaq passages (long) and
  questions (short): per CPU-second on one core and wall clock on every core; the cosine of their
  vectors; and the int8 vs fp32 GEMM ceiling of ONNX Runtime at the model's shapes on this CPU
  (named, with its int8 extensions), which bounds the ratio.
* questions: pyfaq questions (extractive, no LLM) through the local services (redis, one worker per
  queue, the gateway over HTTP) and through the same stage functions in one process; p50/p95 of
  each and the ratio services / in-process (target <= 1.10).
* index:     chitchat exports indexed to 10k and 100k chunks with the product indexer: chunks,
  on-disk size, build time, and search (plan + every leg + fusion) p50/p95 at each size.

Indexes and the stand-in cross-encoder are cached under ``--cache-dir`` (keyed by corpus and
settings), so only the first run pays for embedding: ~20k pyfaq chunks and 100k chitchat chunks
(the 100k index starts as a copy of the 10k one). That first run takes as long as embedding them
does here (at 120 chunks/s, ~17 min); ``--pyfaq-documents`` and ``--index-sizes`` make it smaller.
Other processes on the same cores make the absolute figures noisy; contenders are interleaved so
that the ratios are not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.corpora import BuiltIndex, chitchat_conversations, chitchat_indexes, pyfaq_index
from bench.question_paths import InProcessPipeline, linked_store, private_stack_settings, service_stack
from bench.reranker_throughput import (
    LABEL,
    TORCH,
    as_service,
    bench_pairs,
    bench_questions,
    flat,
    int8_gemm_ceiling,
    pairs_per_second,
    per_question,
    question_pairs_per_second,
    torch_baseline,
)
from bench.retrieval_quality import DEFAULT_CACHE, DEFAULT_DATASET, Dataset, load_dataset
from provisioning.onnx_export import packaged_minilm_dir
from provisioning.reranker import ProvisionReport
from provisioning.standin import build_standin
from services.reranker.cross_encoder import PROVENANCE_FILE
from services.reranker.service import Reranker
from services.retriever.exact import ExactSearcher, find_rg
from services.retriever.keywords import StoreIdf
from services.retriever.planner import rule_based_plan
from services.retriever.search import RetrievalConfig, Retriever
from shared.contracts import Strategy
from shared.cpu import available_cores
from shared.embedding import OnnxEmbedder
from shared.onnx_runtime import cpu_label
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore

SECTIONS = ("reranker", "embedder", "questions", "index")
WARM_UP_QUERIES = 3
OLD_VERSIONS = "live: the current version's rows and vectors; the rest is versions not yet cleaned up"


@dataclass
class Row:
    measure: str
    figure: str
    baseline: str = ""
    ratio: str = ""
    note: str = ""


def percentile(samples: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def standin_reranker(cache: Path) -> tuple[Path, ProvisionReport]:
    """The offline stand-in cross-encoder (what ``hindsight models prepare --standin-reranker`` builds)."""
    folder = cache / "reranker-standin"
    if not (folder / PROVENANCE_FILE).exists():
        print("  building the stand-in cross-encoder (cached after this run)", flush=True)
        build_standin(folder)
    return folder, ProvisionReport.model_validate_json((folder / PROVENANCE_FILE).read_text())


def reranker_rows(settings: Settings, pairs: int, rounds: int) -> list[Row]:
    reranker = Reranker(settings.reranking, settings.reranker_dir, settings.embedding.onnx_threads)
    if reranker.batcher is None or reranker.encoder is None:
        raise RuntimeError(f"no cross-encoder at {settings.reranker_dir}")
    batcher, threads = reranker.batcher, available_cores()
    questions = bench_questions(bench_pairs(pairs))
    scored = flat(questions)
    with tempfile.TemporaryDirectory() as tmp:
        torch_score = torch_baseline(Path(tmp) / "torch", threads)
        gap = np.abs(np.asarray(torch_score(scored[:16])) - batcher.submit(scored[:16]).result()).max()
        encoder = reranker.encoder
        worker = f"reranker worker ({encoder.precision}, runs of {encoder.pairs_per_run}, micro-batcher)"
        rates = question_pairs_per_second(
            [(worker, as_service(batcher)), (TORCH, per_question(torch_score))], questions, rounds
        )
    note = (
        f"{len(questions)} questions of 20-64 pairs ({len(scored)} pairs), best of {rounds} interleaved "
        f"rounds, {threads} threads; same weights (largest logit gap on 16 pairs {gap:.3f}) {LABEL}"
    )
    return [
        Row(
            f"{worker} vs {TORCH}",
            f"{rates[worker]:.1f} pairs/s",
            f"{rates[TORCH]:.1f} pairs/s",
            f"{rates[worker] / rates[TORCH]:.2f}x",
            note,
        )
    ]


def embedder_rows(dataset: Dataset, settings: Settings, texts: int, rounds: int) -> list[Row]:
    """OnnxEmbedder against SentenceTransformer.encode (same weights, fp32, same texts): long passages
    (pyfaq's, truncated at 256 tokens by both) and short sentences (pyfaq's questions), wall clock
    with every core and per CPU-second on one core; then what this CPU allows int8 at the model's
    GEMM shapes, which bounds the ratio."""
    import torch
    from sentence_transformers import SentenceTransformer

    threads = available_cores()
    passages = [dataset.corpus[i]["text"] for i in sorted(dataset.corpus) if dataset.corpus[i]["text"]][
        :texts
    ]
    questions = list(dataset.queries.values())[:texts]
    reference = SentenceTransformer(str(packaged_minilm_dir()), device="cpu")
    batch = settings.embedding.embed_batch_size

    def encode(items: list[str]) -> np.ndarray:
        vectors = reference.encode(
            items, batch_size=batch, show_progress_bar=False, normalize_embeddings=True
        )
        return np.asarray(vectors)

    onnx = OnnxEmbedder(settings.embedder_dir, settings.embedding.onnx_threads, batch)
    one_core = OnnxEmbedder(settings.embedder_dir, 1, batch)
    onnx_name, torch_name = f"OnnxEmbedder ({onnx.name})", "SentenceTransformer.encode (torch fp32)"
    plan = f"runs of {onnx.plan.run_tokens} tokens{', side by side' if onnx.plan.side_by_side else ''}"
    torch.set_num_threads(1)
    cosines = {
        name: (encode(items) * one_core.embed_documents(items)).sum(axis=1)
        for name, items in (("long", passages), ("short", questions))
    }
    agreement = ", ".join(f"{n} min {c.min():.4f} mean {c.mean():.4f}" for n, c in cosines.items())
    rows = []
    for label, items in (("long passages", passages), ("short sentences", questions)):
        torch.set_num_threads(1)
        per_cpu = pairs_per_second(
            [(onnx_name, one_core.embed_documents), (torch_name, encode)],
            items,
            rounds,
            clock=time.thread_time,
        )
        torch.set_num_threads(threads)
        wall = pairs_per_second([(onnx_name, onnx.embed_documents), (torch_name, encode)], items, rounds)
        for how, rates in (("per CPU-second, 1 core each", per_cpu), (f"{threads} cores, wall clock", wall)):
            rows.append(
                Row(
                    f"embedder vs {torch_name}: {len(items)} pyfaq {label}, {how}",
                    f"{rates[onnx_name]:.1f} texts/s",
                    f"{rates[torch_name]:.1f} texts/s",
                    f"{rates[onnx_name] / rates[torch_name]:.2f}x",
                    f"{plan}; ST batch {batch}; best of {rounds} interleaved rounds",
                )
            )
    rows.append(
        Row(
            "embedder int8 vs fp32 (torch) cosine",
            agreement,
            note=f"{len(passages)} passages, {len(questions)} questions",
        )
    )
    cpu = cpu_label()
    for rows_, inner, outer in ((256, 384, 1536), (256, 1536, 384)):
        gops = int8_gemm_ceiling(rows_, inner, outer)
        int8 = next(v for k, v in gops.items() if k != "fp32")
        rows.append(
            Row(
                f"GEMM ceiling: ORT int8 vs fp32 MatMul, {rows_}x{inner} by {inner}x{outer}, 1 core",
                f"{int8:.0f} GOPS int8",
                f"{gops['fp32']:.0f} GOPS fp32",
                f"{int8 / gops['fp32']:.2f}x",
                f"what int8 buys the GEMMs (most of the model's work) on {cpu}",
            )
        )
    return rows


def question_rows(
    dataset: Dataset, built: BuiltIndex, settings: Settings, work: Path, questions: int
) -> list[Row]:
    """Each question through the services and in-process, alternating which goes first."""
    texts = [dataset.queries[q] for q in sorted(dataset.queries)][:questions]
    data_dir = work / "data"
    linked_store(data_dir, built.store)
    stack_settings = private_stack_settings(settings, data_dir, models_dir=settings.resolved_models_dir)
    env = {
        "HINDSIGHT_LLM": "none",
        "HINDSIGHT_MODELS_DIR": str(settings.resolved_models_dir),
        "HINDSIGHT_RERANKER_MODEL_DIR": str(settings.reranker_dir),
    }
    local = InProcessPipeline(stack_settings)
    services: list[float] = []
    in_process: list[float] = []
    with service_stack(stack_settings, env) as stack:
        paths = [(stack.answer, services), (local.answer, in_process)]
        for answer, _ in paths:  # warm-up: models loaded, first store reads done
            answer(texts[0])
        for n, text in enumerate(texts):
            for answer, samples in paths if n % 2 else paths[::-1]:
                started = time.perf_counter()
                answer(text)
                samples.append(time.perf_counter() - started)
    ratio = statistics.median(services) / statistics.median(in_process)
    mean_ratio = statistics.mean(services) / statistics.mean(in_process)
    where = f"{len(texts)} pyfaq questions, {built.chunks} chunks, extractive, reranker {LABEL}"
    return [
        Row(
            "question latency: services (HTTP + Celery) vs in-process, p50",
            ms(statistics.median(services)),
            ms(statistics.median(in_process)),
            f"{ratio:.2f}x",
            f"target <= 1.10 (mean ratio {mean_ratio:.2f}x); {where}",
        ),
        Row(
            "question latency: services vs in-process, p95",
            ms(percentile(services, 0.95)),
            ms(percentile(in_process, 0.95)),
            f"{percentile(services, 0.95) / percentile(in_process, 0.95):.2f}x",
            where,
        ),
    ]


def search_latencies(indexes: list[BuiltIndex], settings: Settings, queries: list[str]) -> list[list[float]]:
    """The retriever's work for a question (rules plan, every leg, fusion: what the search stage does)
    at each index; each query runs on every index in turn, so load spikes hit all sizes alike."""
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    config = RetrievalConfig.from_settings(settings.retrieval, Strategy.PRECISE)
    searchers = []
    for index in indexes:
        store = LanceDBStore(index.store, embedder.dimension)
        retriever = Retriever(
            store, embedder, ExactSearcher(store, find_rg(settings.retrieval.rg_path)), None
        )
        searchers.append((retriever, StoreIdf(store)))
    samples: list[list[float]] = [[] for _ in indexes]
    for n, query in enumerate([*queries[:WARM_UP_QUERIES], *queries]):
        for (retriever, idf), timings in zip(searchers, samples, strict=True):
            started = time.perf_counter()
            retriever.search(rule_based_plan(query, idf, settings.retrieval.exact_max_keywords), config)
            if n >= WARM_UP_QUERIES:
                timings.append(time.perf_counter() - started)
    return samples


def index_rows(sizes: list[int], cache: Path, settings: Settings, queries: int) -> list[Row]:
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    built, how = chitchat_indexes(sizes, cache, embedder, settings)
    conversations, _ = chitchat_conversations()
    prompts = sorted({c["prompt"] for c in conversations.values() if c.get("prompt")})
    texts = prompts[:: max(1, len(prompts) // queries)][:queries]
    latencies = search_latencies(built, settings, texts)
    rows = []
    for index, samples in zip(built, latencies, strict=True):
        rows.append(
            Row(
                f"index {index.name}: {index.chunks} chunks, {index.documents} files",
                f"{index.disk_bytes / 2**20:.1f} MiB on disk ({index.live_bytes / 2**20:.1f} MiB live)",
                f"built in {index.build_s:.0f} s ({index.chunks / index.build_s:.0f} chunks/s)",
                "",
                "; ".join(filter(None, [index.note, OLD_VERSIONS])),
            )
        )
        rows.append(
            Row(
                f"search at {index.chunks} chunks, p50 / p95",
                f"{ms(statistics.median(samples))} / {ms(percentile(samples, 0.95))}",
                "",
                "",
                f"{len(samples)} distinct chitchat prompts; rules plan, dense + BM25 + ripgrep, fused",
            )
        )
    if len(built) > 1:
        largest, smallest = percentile(latencies[-1], 0.95), percentile(latencies[0], 0.95)
        rows.append(
            Row(
                f"search p95 at {built[-1].chunks} vs {built[0].chunks} chunks",
                ms(largest),
                ms(smallest),
                f"{largest / smallest:.2f}x",
                "same queries, interleaved across the sizes",
            )
        )
    rows.append(Row("chitchat corpus", how, note="rendered by the scraper's Markdown renderer"))
    return rows


def print_table(rows: list[Row]) -> None:
    print("\n| measure | figure | baseline | ratio | note |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {row.measure} | {row.figure} | {row.baseline} | {row.ratio} | {row.note} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {SECTIONS}")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--pairs", type=int, default=512, help="reranker pairs per round")
    parser.add_argument("--texts", type=int, default=256, help="embedder passages per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--questions", type=int, default=40, help="pyfaq questions per path")
    parser.add_argument(
        "--pyfaq-documents", type=int, default=None, help="index the first N (+ those the queries judge)"
    )
    parser.add_argument("--index-sizes", default="10000,100000", help="chunks of each chitchat index")
    parser.add_argument("--queries", type=int, default=40, help="search queries per index size")
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    started = time.perf_counter()
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {available_cores()} cores", flush=True)
    cache = args.cache_dir
    reranker_dir, report = standin_reranker(cache) if {"reranker", "questions"} & set(only) else (None, None)
    settings = Settings(llm="none", reranker_model_dir=reranker_dir)
    dataset = None
    if {"embedder", "questions"} & set(only):
        if not (args.dataset / "corpus.jsonl").exists():
            parser.error(f"no BEIR set at {args.dataset} (embedder and questions read it): pass --dataset")
        dataset = load_dataset(args.dataset)
    rows: list[Row] = []
    if "reranker" in only:
        print("reranker ...", flush=True)
        rows += reranker_rows(settings, args.pairs, args.rounds)
    if "embedder" in only and dataset is not None:
        print("embedder ...", flush=True)
        rows += embedder_rows(dataset, settings, args.texts, args.rounds)
    if "questions" in only and dataset is not None:
        print("questions ...", flush=True)
        embedder = OnnxEmbedder(
            settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
        )
        built = pyfaq_index(dataset, args.pyfaq_documents, cache, embedder, settings)
        with tempfile.TemporaryDirectory(prefix="hindsight-speed-") as work:
            rows += question_rows(dataset, built, settings, Path(work), args.questions)
    if "index" in only:
        print("index ...", flush=True)
        sizes = [int(s) for s in args.index_sizes.split(",")]
        rows += index_rows(sizes, cache, settings, args.queries)
    if report is not None:
        rows.append(Row("cross-encoder", "stand-in", note=f"{report.detail} {LABEL}"))
    print_table(rows)
    load = os.getloadavg()[0]
    print(f"\n{time.perf_counter() - started:.0f} s in all; load average after: {load:.2f} (1 min)")


if __name__ == "__main__":
    main()
