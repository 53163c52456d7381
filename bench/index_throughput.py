"""Indexing throughput: the embedder alone against the whole indexer, and the cost of re-syncing.

For each tree, a generated one of N short Markdown notes and, with ``--corpus``, a real BEIR corpus
(``corpus.jsonl``, one Markdown file per document, as an exporter writes them; ``--limit N`` takes a
seeded sample of N documents), it prints:

* the embedder alone: chunks/s embedding the passages the indexer would embed (title, headings and
  text of each chunk) of a sample of the tree's files, in one call; timed before and after the
  full index, so a change of the machine's load between them shows;
* the whole indexer (scan, load, chunk, embed, write the store, refresh its indexes, in the
  indexer's batches) from an empty store: chunks/s, time, and the ratio to the embedder alone
  (the mean of its two timings);
* the re-sync of the unchanged tree (target: at most 2 % of the full index) and with one file changed.

It names the CPU and its int8 extensions, and the load average before and after. In-process with
the embedded backends (ONNX embedder, LanceDB), so it measures the indexer, not the broker:

    PYTHONPATH=. HINDSIGHT_MODELS_DIR=... python bench/index_throughput.py --files 1000 \\
        --corpus ../shared/eval/pyfaq-dev --limit 1000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from services.indexer.manifest_diff import document_id_for
from services.indexer.pipeline import prepare_file, sync_root
from shared.contracts import IndexFileTask, IndexRequest, ScanReport
from shared.embedding import OnnxEmbedder
from shared.onnx_runtime import cpu_label
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore

WORDS = [
    *("sourdough", "starter", "fermentation", "rye", "spelt", "hydration", "crumb", "crust", "oven"),
    *("steam", "retrieval", "reranker", "embedding", "vector", "index", "passage", "citation"),
    *("question", "answer", "research", "thread", "notes", "summary", "detail"),
]


def write_tree(root: Path, files: int, seed: int = 7) -> None:
    """``files`` Markdown notes of 1 to 3 sections, in folders of 100."""
    rng = random.Random(seed)
    for i in range(files):
        folder = root / f"folder-{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        sections = []
        for s in range(rng.randint(1, 3)):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 120)))
            sections.append(f"## Section {s}\n\n{words}.\n")
        (folder / f"note-{i:04d}.md").write_text(f"# Note {i}\n\n" + "\n".join(sections))


def write_corpus(corpus: Path, root: Path, limit: int | None, seed: int = 7) -> int:
    """The BEIR corpus's documents (a seeded sample of ``limit``) as Markdown files with the title in
    front matter, in folders of 1,000; returns how many."""
    rows = [json.loads(line) for line in (corpus / "corpus.jsonl").read_text().splitlines() if line.strip()]
    rows.sort(key=lambda row: row["_id"])
    if limit is not None and limit < len(rows):
        rows = sorted(random.Random(seed).sample(rows, limit), key=lambda row: row["_id"])
    for number, row in enumerate(rows):
        folder = root / f"part-{number // 1000:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        title = json.dumps(row.get("title") or "")
        (folder / f"d{number:07d}.md").write_text(f"---\ntitle: {title}\n---\n\n{row['text']}\n")
    return len(rows)


def sample_passages(root: Path, embedder: OnnxEmbedder, settings: Settings, files: int) -> list[str]:
    """The passages the indexer embeds for a seeded sample of ``files`` of the tree."""
    paths = sorted(root.rglob("*.md"))
    sample = sorted(random.Random(3).sample(paths, min(files, len(paths))))
    passages: list[str] = []
    for path in sample:
        task = IndexFileTask(
            job_id="bench",
            root=str(root),
            path=str(path),
            document_id=document_id_for(str(path)),
            content_hash="",
        )
        passages += prepare_file(task, embedder.token_spans, settings.indexing, settings.data_dir).passages
    return passages


@dataclass
class Rate:
    """Chunks per second of wall clock, and per CPU-second of this process (all its threads): the
    second hardly moves with other load on the machine, the first is what a user waits."""

    wall: float
    cpu: float


def timed(items: int, work: Callable[[], object]) -> Rate:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return Rate(items / (time.perf_counter() - wall), items / (time.process_time() - cpu))


@dataclass
class TreeFigures:
    name: str
    files: int
    full: ScanReport
    unchanged: ScanReport
    one_changed: ScanReport
    embed_rates: tuple[Rate, Rate]  # before and after the full index
    index_rate: Rate
    sample_chunks: int

    @property
    def embed_rate(self) -> Rate:
        before, after = self.embed_rates
        return Rate((before.wall + after.wall) / 2, (before.cpu + after.cpu) / 2)


def measure(
    name: str, root: Path, data: Path, embedder: OnnxEmbedder, settings: Settings, sample: int
) -> TreeFigures:
    """Embedder alone, full index, embedder alone again, then the two re-syncs."""
    settings = settings.replace(data_dir=data, roots=[root])
    store = LanceDBStore(settings.store_dir, embedder.dimension)
    request = IndexRequest(job_id="bench", root=str(root))
    passages = sample_passages(root, embedder, settings, sample)
    before = timed(len(passages), lambda: embedder.embed_documents(passages))
    reports: list[ScanReport] = []
    index_rate = timed(
        1, lambda: reports.append(sync_root(request, store, embedder, settings.indexing, settings.data_dir))
    )
    full = reports[0]
    index_rate = Rate(index_rate.wall * full.chunks, index_rate.cpu * full.chunks)
    after = timed(len(passages), lambda: embedder.embed_documents(passages))
    unchanged = sync_root(request, store, embedder, settings.indexing, settings.data_dir)
    paths = sorted(root.rglob("*.md"))
    changed_file = paths[len(paths) // 2]
    changed_file.write_text(changed_file.read_text() + "\nOne more sentence about crumb.\n")
    one_changed = sync_root(request, store, embedder, settings.indexing, settings.data_dir)
    files = full.new + full.changed
    return TreeFigures(name, files, full, unchanged, one_changed, (before, after), index_rate, len(passages))


def print_figures(figures: TreeFigures) -> None:
    full = figures.full
    print(
        f"\n{figures.name}: {figures.files} files, {full.chunks} chunks "
        f"({full.skipped} skipped, {full.failed} failed)"
    )
    embed, index = figures.embed_rate, figures.index_rate
    before, after = figures.embed_rates
    print(
        f"  embedder alone:     {embed.wall:8.1f} chunks/s, {embed.cpu:6.1f} per CPU-s "
        f"({figures.sample_chunks} chunks of a sample; before/after the index "
        f"{before.wall:.1f} / {after.wall:.1f} chunks/s)"
    )
    print(
        f"  whole indexer:      {index.wall:8.1f} chunks/s, {index.cpu:6.1f} per CPU-s "
        f"({full.elapsed_s:.1f} s from an empty store)"
    )
    print(
        f"  indexer / embedder: {index.wall / embed.wall:8.2f}x wall clock "
        f"({index.wall / max(before.wall, after.wall):.2f}-{index.wall / min(before.wall, after.wall):.2f}x "
        f"against either timing), {index.cpu / embed.cpu:.2f}x per CPU-second; target >= 0.8"
    )
    share = 100 * figures.unchanged.elapsed_s / full.elapsed_s
    print(
        f"  re-sync, unchanged: {figures.unchanged.elapsed_s:8.3f} s = {share:.2f}% of the full index "
        f"(target <= 2%); embedded {figures.unchanged.chunks} chunks"
    )
    print(
        f"  re-sync, 1 changed: {figures.one_changed.elapsed_s:8.3f} s = "
        f"{100 * figures.one_changed.elapsed_s / full.elapsed_s:.2f}% of the full index; "
        f"embedded {figures.one_changed.chunks} chunks"
    )


@dataclass
class CeleryRun:
    workers: int
    elapsed_s: float
    report: ScanReport
    document_events: int
    distinct_files: int
    progress: tuple[int, int]  # done, total
    batches_per_worker: list[int]
    stored_chunks: int
    cpu_s: float  # of all the workers, from the scan's send to its report


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def celery_run(root: Path, work: Path, workers: int) -> CeleryRun:
    """One scan of ``root`` through Celery: a private ``redis-server`` on a free loopback port and
    ``workers`` ``celery worker -Q index`` processes (solo pool, the cores split between them) sharing
    it and one store; timed from the scan's send to its report, once every worker is ready. The
    workers stay in this process's session: Linux's autogroup scheduler gives each session an equal
    share of a busy machine, so workers in sessions of their own would get more of it the more they
    are, and the comparison would measure the other load."""
    import subprocess
    import uuid

    import redis
    from celery import Celery

    from shared.contracts import Event
    from shared.cpu import available_cores
    from shared.events import EVENT_FIELD
    from shared.index_jobs import read_progress
    from shared.redis_keys import events_key, index_report_key
    from shared.topology import task_routes, worker
    from shared.worker import Launch, worker_argv
    from testing.processes import running_redis, wait_for

    work.mkdir(parents=True)
    with running_redis(work) as url:
        env = {key: value for key, value in os.environ.items() if not key.startswith("HINDSIGHT_")}
        env.update(
            PYTHONPATH=str(Path(__file__).resolve().parents[1]),
            HINDSIGHT_REDIS_URL=url,
            HINDSIGHT_DATA_DIR=str(work / "data"),
            HINDSIGHT_MODELS_DIR=str(Settings().resolved_models_dir),
            HINDSIGHT_ROOTS=str(root),
            HINDSIGHT_ONNX_THREADS=str(max(1, available_cores() // workers)),
        )
        logs = [work / f"worker-{n}.log" for n in range(workers)]
        launches = [
            Launch(
                name=f"bench-{n}", pool="solo", concurrency=1, loglevel="INFO", alone=True, heartbeat=False
            )
            for n in range(workers)
        ]
        processes = [
            subprocess.Popen(
                worker_argv(worker("indexer"), launch),
                env=env,
                stdout=log.open("ab"),
                stderr=subprocess.STDOUT,
            )
            for launch, log in zip(launches, logs, strict=True)
        ]
        try:
            wait_for(lambda: all(" ready." in log.read_text() for log in logs), 300, "the workers", 0.2)
            client = Celery("bench", broker=url, backend=url)
            client.conf.update(task_serializer="json", accept_content=["json"], task_routes=task_routes())
            job_id = uuid.uuid4().hex
            cpu_before = sum(process_cpu_s(process.pid) for process in processes)
            started = time.perf_counter()
            client.send_task("index.scan", args=[IndexRequest(job_id=job_id, root=str(root)).to_payload()])
            db = redis.Redis.from_url(url, decode_responses=True)

            def report_text() -> str | None:
                return db.get(index_report_key(job_id))  # type: ignore[return-value]

            raw = str(wait_for(report_text, 3600, "the job's report", 0.2))
            elapsed = time.perf_counter() - started
            cpu_s = sum(process_cpu_s(process.pid) for process in processes) - cpu_before
            entries: list[tuple[str, dict[str, str]]] = db.xrange(events_key(job_id))  # type: ignore[assignment]
            events = [Event.model_validate_json(fields[EVENT_FIELD]) for _, fields in entries]
            documents = [e for e in events if e.stage == "document"]
            progress = read_progress(job_id, db)
        finally:
            for process in processes:
                process.terminate()
                process.wait(30)
    report = ScanReport.model_validate_json(raw)
    store = LanceDBStore(work / "data" / "store", 384)
    return CeleryRun(
        workers=workers,
        elapsed_s=elapsed,
        report=report,
        document_events=len(documents),
        distinct_files=len({e.data["result"]["path"] for e in documents}),
        progress=(progress.done, progress.total) if progress else (0, 0),
        batches_per_worker=[log.read_text().count("index.batch[") // 2 for log in logs],
        stored_chunks=store.count_chunks(),
        cpu_s=cpu_s,
    )


def print_celery(run: CeleryRun, single: CeleryRun | None) -> None:
    report = run.report
    speedup = f" = {single.elapsed_s / run.elapsed_s:.2f}x one worker" if single and single is not run else ""
    print(
        f"  {run.workers} worker(s): {report.chunks} chunks of {report.new} files in {run.elapsed_s:.1f} s "
        f"({report.chunks / run.elapsed_s:.1f} chunks/s){speedup}, {report.chunks / run.cpu_s:.1f} chunks "
        f"per CPU-s of the workers; "
        f"batches per worker {run.batches_per_worker}; "
        f"{run.document_events} file events for {run.distinct_files} distinct files, progress "
        f"{run.progress[0]}/{run.progress[1]}, {run.stored_chunks} chunks stored"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1000, help="generated notes (0: no synthetic tree)")
    parser.add_argument("--corpus", type=Path, help="a BEIR folder (corpus.jsonl) to index as Markdown files")
    parser.add_argument("--limit", type=int, help="a seeded sample of this many corpus documents")
    parser.add_argument("--embed-sample", type=int, default=200, help="files whose chunks time the embedder")
    parser.add_argument(
        "--workers", default="", help="e.g. 1,2: index the last tree through Celery with that many workers"
    )
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    print(f"CPU: {cpu_label()}")
    indexing = settings.indexing
    print(
        f"embedder {embedder.name}: runs of {embedder.plan.run_tokens} tokens, "
        f"{'side by side on the cores' if embedder.plan.side_by_side else 'one at a time on all cores'}; "
        f"chunks of {indexing.chunk_tokens} tokens (overlap {indexing.chunk_overlap}), batches of "
        f"{indexing.index_batch_files} files, embedder calls of ~{indexing.index_embed_tokens} tokens"
    )
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min)")
    with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
        trees: list[TreeFigures] = []
        if args.files:
            root = Path(tmp) / "synthetic"
            write_tree(root, args.files)
            trees.append(
                measure(
                    "synthetic notes",
                    root,
                    Path(tmp) / "data-synthetic",
                    embedder,
                    settings,
                    args.embed_sample,
                )
            )
            print_figures(trees[-1])
        if args.corpus:
            root = Path(tmp) / "corpus"
            documents = write_corpus(args.corpus, root, args.limit)
            name = f"{args.corpus.name} ({documents} documents)"
            trees.append(
                measure(name, root, Path(tmp) / "data-corpus", embedder, settings, args.embed_sample)
            )
            print_figures(trees[-1])
        if args.workers:
            last = Path(tmp) / ("corpus" if args.corpus else "synthetic")
            print(f"\nthrough Celery ({last.name} tree; a private redis-server, workers sharing one store):")
            runs = []
            for workers in [int(n) for n in args.workers.split(",")]:
                runs.append(celery_run(last, Path(tmp) / f"celery-{workers}", workers))
                print_celery(runs[-1], runs[0])
    print(f"\nload average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
