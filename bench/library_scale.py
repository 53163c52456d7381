"""A Perplexity library of 10k and 100k chunks, indexed and asked through the product's own stack.

    PYTHONPATH=. python bench/library_scale.py --corpus bench/sets/debian-faq bench/sets/zsh-faq \\
        bench/sets/r-faq bench/sets/perlfaq ../shared/eval/pyfaq-dev --sizes 10000 100000 --profile-s 120

The library (``bench.corpora.documentation_threads``): the real documentation sections of the
``--corpus`` folders, in the order given, asked and answered as Perplexity threads of one to four
turns and rendered by the scraper's own renderer; past the sections there are, remixed threads whose
answers join two real sections drawn at random. Each size is rendered once into the cache.

Per size, on a stack of its own (``hindsight up``: redis-server, one worker process per queue, the
gateway, on free loopback ports over a fresh data folder; extractive answers; the stand-in
cross-encoder reranking, as in ``speed_suite``):

* the first index: ``POST /v1/index`` of the library's folder, timed to its report (the store's
  vector index trained where the library is large enough, so questions then run at full speed):
  seconds, chunks/s, the store on disk, and the peak resident memory of the stack's processes (each
  process's peak, summed: a bound) and of the largest. With ``--profile-s``, ``py-spy`` samples the
  index worker that long from the first minute on, and the samples are shared out by stage.
* questions: ``--questions`` of the first ``--ask`` sets' questions whose relevant section is in
  the smallest library (a seeded sample, the same at every size), each posted through the gateway
  and timed to its answer event: p50 / p95. The stand-in's head is untrained, so its order says
  nothing of relevance: the same questions are then answered by the same stages in this process
  (``InProcessPipeline``) with the cross-encoder the models folder holds (none: the fused order),
  and ``first`` is the share whose first citation quotes the relevant section (its quote is a piece
  of that section's text; a remix holding it counts).

Last, the p95 of each size over the smallest's (issue 35: at most 1.5x, and at most 1.0 s at 100k).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from bench.corpora import THREADS_SEED, Section, TreePart, documentation_library, section_groups
from bench.question_paths import InProcessPipeline, ServiceStack, private_stack_settings, service_stack
from bench.retrieval_quality import DEFAULT_CACHE, load_dataset
from bench.speed_suite import standin_reranker
from bench.store_scale import exact_scan, recall
from cli.local_stack import LocalStack
from shared.contracts import Answer
from shared.embedding import OnnxEmbedder
from shared.index_jobs import register_root
from shared.onnx_runtime import cpu_label
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore

WARM_UP_QUESTIONS = 3
DENSE_POOL = 100
STAGE_NAMES = ("plan", "search", "rerank", "map", "reduce")
# Where a py-spy sample of the index worker is, by the innermost frame that names a stage.
STAGES = (
    ("the embedder's model (ONNX Runtime)", ("onnxruntime", "onnx_runtime")),
    ("tokeniser", ("encode_batch", "tokenizers")),
    ("store writes and compaction", ("lancedb", "lance", "replace_documents", "refresh_indexes")),
    ("loading and chunking files", ("loaders", "chunking", "markdown_source", "safe_files")),
    ("Celery, Redis and events", ("celery", "kombu", "redis", "events", "index_jobs")),
)


@dataclass(frozen=True)
class AskedQuestion:
    text: str
    relevant: list[str]  # the texts of its relevant sections


@dataclass
class SizeFigures:
    part: TreePart
    index_s: float = 0.0
    chunks: int = 0
    store_mb: float = 0.0
    memory_mb: float = 0.0
    largest_process: str = ""
    latencies: list[float] = field(default_factory=list)  # through the gateway, the stand-in reranking
    stages: list[dict[str, float]] = field(default_factory=list)  # in-process, the same
    installed: list[float] = field(default_factory=list)  # in-process, the installed reranker
    first: list[bool] = field(default_factory=list)  # the same
    recall: float = 0.0  # recall@50 of the store's dense search against the exact scan
    profile: Counter[str] = field(default_factory=Counter)


def squeezed(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def covered_sections(sections: list[Section], real_threads: int) -> set[str]:
    """The ids of the sections the first ``real_threads`` threads answer with."""
    groups = section_groups(sections, random.Random(THREADS_SEED))
    return {section.doc_id for group in islice(groups, real_threads) for section in group}


def questions_to_ask(
    ask: list[Path], sections: list[Section], smallest: TreePart, count: int
) -> list[AskedQuestion]:
    """A seeded sample of the ``ask`` sets' questions whose relevant sections the smallest library holds."""
    texts = {s.doc_id: s.text for s in sections}
    covered = covered_sections(sections, smallest.real_files)
    asked = []
    for folder in ask:
        dataset = load_dataset(folder)
        for query_id, text in sorted(dataset.queries.items()):
            relevant = [doc for doc, score in dataset.qrels[query_id].items() if score > 0 and doc in texts]
            if relevant and all(doc in covered for doc in relevant):
                asked.append(AskedQuestion(text, [texts[doc] for doc in relevant]))
    return random.Random(5).sample(asked, min(count, len(asked)))


def quotes_relevant(answer: Answer, question: AskedQuestion) -> bool:
    if not answer.citations:
        return False
    quote = squeezed(answer.citations[0].quote)
    return any(quote and quote in squeezed(text) for text in question.relevant)


def process_tree(pids: list[int]) -> list[int]:
    """The pids and every descendant of them (Celery's pool children)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(pids), list(pids)
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid and child not in found]
        found.update(children)
        frontier.extend(children)
    return sorted(found)


def peak_memory_mb(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else 0.0


def stack_memory(stack: LocalStack) -> tuple[float, str]:
    """Each of the stack's processes' peak resident memory, summed, and the largest one's."""
    peaks = {
        name: sum(peak_memory_mb(pid) for pid in process_tree([pid])) for name, pid in stack.running().items()
    }
    largest = max(peaks, key=peaks.__getitem__)
    return sum(peaks.values()), f"{largest} {peaks[largest]:,.0f} MB"


def index_worker_pid(stack: LocalStack) -> int | None:
    """The Celery pool child of the indexer, where batches are embedded and written."""
    main = next((pid for name, pid in stack.running().items() if name.startswith("indexer")), None)
    if main is None:
        return None
    children = [pid for pid in process_tree([main]) if pid != main]
    return children[0] if children else main


def sampled_stages(pid: int, seconds: int, out: Path) -> Counter[str]:
    """py-spy's samples of ``pid`` for ``seconds``, counted by stage (the innermost frame that names one)."""
    subprocess.run(
        ["py-spy", "record", "--pid", str(pid), "--duration", str(seconds), "--rate", "50", "--format", "raw",
         "--output", str(out), "--nonblocking"],
        check=True, capture_output=True,
    )  # fmt: skip
    stages: Counter[str] = Counter()
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")[::-1]
        stage = next(
            (name for frame in frames for name, marks in STAGES if any(mark in frame for mark in marks)),
            "other",
        )
        stages[stage] += int(count)
    return stages


def first_index(
    stack: ServiceStack, local: LocalStack, root: Path, figures: SizeFigures, profile_s: int
) -> None:
    started = time.perf_counter()
    job = stack.client.index(str(root))
    profiler: threading.Thread | None = None
    if profile_s:

        def profile() -> None:
            time.sleep(60)
            pid = index_worker_pid(local)
            if pid is not None:
                with tempfile.TemporaryDirectory() as folder:
                    figures.profile = sampled_stages(pid, profile_s, Path(folder) / "profile.txt")

        profiler = threading.Thread(target=profile, daemon=True)
        profiler.start()
    for event in stack.client.index_events(job):
        if event.stage == "index" and event.status in {"done", "failed"}:
            break
    figures.index_s = time.perf_counter() - started
    report = stack.client.index_report(job)
    if report is None or report.failed:
        raise RuntimeError(f"the first index of {root} failed: {report}")
    figures.chunks = report.chunks
    if profiler is not None:
        profiler.join()


def measure_size(
    folder: Path,
    part: TreePart,
    work: Path,
    settings: Settings,
    reranker: Path,
    asked: list[AskedQuestion],
    profile_s: int,
) -> SizeFigures:
    """The first index of ``folder`` on a stack of its own, then the questions. The stack's data folder
    is kept in ``work`` with the first index's figures, so a later run asks again over the same store
    without indexing it again (``--fresh`` indexes anew)."""
    record, data_dir = work / "first-index.json", work / "data"
    figures = SizeFigures(part)
    if record.exists():
        saved = json.loads(record.read_text())
        figures = SizeFigures(part, **{**saved, "profile": Counter(saved["profile"])})
    else:
        shutil.rmtree(work, ignore_errors=True)
    stack_settings = private_stack_settings(settings, data_dir, models_dir=settings.resolved_models_dir)
    env = {
        "HINDSIGHT_LLM": "none",
        "HINDSIGHT_MODELS_DIR": str(settings.resolved_models_dir),
        "HINDSIGHT_RERANKER_MODEL_DIR": str(reranker),
        "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "1000000",  # one user asking as fast as the stack answers
    }
    with service_stack(stack_settings, env) as stack:
        local = LocalStack(stack_settings)
        if not record.exists():
            register_root(stack_settings.roots_file, folder)  # as `hindsight index <folder>` does
            first_index(stack, local, folder, figures, profile_s)
            figures.store_mb = (
                sum(f.stat().st_size for f in (data_dir / "store").rglob("*") if f.is_file()) / 1e6
            )
            figures.memory_mb, figures.largest_process = stack_memory(local)
            kept = ("index_s", "chunks", "store_mb", "memory_mb", "largest_process", "profile")
            record.write_text(json.dumps({name: getattr(figures, name) for name in kept}))
        for question in asked[:WARM_UP_QUESTIONS]:
            stack.answer(question.text)
        for question in asked:
            started = time.perf_counter()
            stack.answer(question.text)
            figures.latencies.append(time.perf_counter() - started)
    staged = InProcessPipeline(stack_settings.replace(reranker_model_dir=reranker))
    for question in asked:
        figures.stages.append({})
        staged.answer(question.text, figures.stages[-1])
    figures.recall = dense_recall(staged, asked)
    as_installed = InProcessPipeline(stack_settings)  # the cross-encoder the models folder holds, if any
    for question in asked:
        started = time.perf_counter()
        answer = as_installed.answer(question.text)
        figures.installed.append(time.perf_counter() - started)
        figures.first.append(quotes_relevant(answer, question))
    return figures


def dense_recall(pipeline: InProcessPipeline, asked: list[AskedQuestion]) -> float:
    """Recall@50 of the store's dense search (its vector index where it trained one) against the
    exact scan, over the questions' vectors: the dense pool of 100, as the product asks."""
    store, embedder = pipeline.parts.store, pipeline.parts.retriever.embedder
    if not isinstance(store, LanceDBStore):
        raise TypeError("the library bench measures the embedded LanceDB store")
    queries = [embedder.embed_query(question.text) for question in asked]
    exact = [exact_scan(store, query, DENSE_POOL) for query in queries]
    found = [[hit.chunk.id for hit in store.dense_search(query, DENSE_POOL)] for query in queries]
    return recall(exact, found)


def folder_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


def milliseconds(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} / {p95(samples) * 1000:.0f}"


def print_figures(all_figures: list[SizeFigures], questions: int) -> None:
    print("\n| chunks | files | first index | chunks/s | store on disk | peak memory (sum; largest) "
          f"| question p50 / p95 ({questions} asked, through the gateway) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for f in all_figures:
        print(
            f"| {f.chunks:,} | {f.part.files:,} | {f.index_s / 60:.1f} min | {f.chunks / f.index_s:.1f} "
            f"| {f.store_mb:,.0f} MB | {f.memory_mb:,.0f} MB; {f.largest_process} "
            f"| {statistics.median(f.latencies):.2f} / {p95(f.latencies):.2f} s |"
        )
    print("\nin this process, same questions: each stage with the stand-in, p50 / p95 ms; then with the "
          "installed cross-encoder (none: the fused order), the question and the share whose first "
          "citation quotes the relevant section")  # fmt: skip
    print(f"| chunks | {' | '.join(STAGE_NAMES)} | installed: p50 / p95 | first | dense recall@50 |")
    print(f"|---|{'---|' * len(STAGE_NAMES)}---|---|---|")
    for f in all_figures:
        stages = " | ".join(milliseconds([s[name] for s in f.stages]) for name in STAGE_NAMES)
        installed = f"{statistics.median(f.installed):.2f} / {p95(f.installed):.2f} s"
        first = sum(f.first) / len(f.first)
        print(f"| {f.chunks:,} | {stages} | {installed} | {first:.3f} | {f.recall:.3f} |")
    smallest = all_figures[0]
    for f in all_figures[1:]:
        print(
            f"p95 at {f.chunks:,} chunks / p95 at {smallest.chunks:,}: "
            f"{p95(f.latencies) / p95(smallest.latencies):.2f}x"
        )
    for f in all_figures:
        if f.profile:
            total = sum(f.profile.values())
            shares = ", ".join(f"{stage} {count / total:.1%}" for stage, count in f.profile.most_common())
            print(f"index worker at {f.chunks:,} chunks, {total} samples: {shares}")
    for f in all_figures:
        print(f"library of {f.chunks:,} chunks: {f.part.describe()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, nargs="+", required=True, help="BEIR folders, in library order"
    )
    parser.add_argument(
        "--ask", type=int, default=4, help="ask the questions of the first ASK corpus folders"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--profile-s", type=int, default=0, help="sample the index worker this long (py-spy)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--fresh", action="store_true", help="index every size anew, not the kept stores")
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(settings.embedder_dir)
    libraries, sections = documentation_library(
        args.corpus, sorted(args.sizes), args.cache_dir, embedder, settings
    )
    asked = questions_to_ask(args.corpus[: args.ask], sections, libraries[0][1], args.questions)
    reranker, _ = standin_reranker(args.cache_dir)
    print(f"{cpu_label()}; {len(asked)} questions", flush=True)
    all_figures = []
    for folder, part in libraries:
        # short: the stack's Redis socket lies under it, and a socket's path has at most 107 bytes
        work = args.cache_dir / f"stack-{folder.parent.parent.name[-8:]}-{part.chunks}"
        if args.fresh:
            shutil.rmtree(work, ignore_errors=True)
        print(
            f"library of {part.chunks:,} chunks ({part.files:,} files): indexing through the gateway",
            flush=True,
        )
        all_figures.append(measure_size(folder, part, work, settings, reranker, asked, args.profile_s))
    print_figures(all_figures, len(asked))


if __name__ == "__main__":
    main()
