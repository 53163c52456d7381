"""Indexing throughput, and the cost of re-syncing a tree that did not (or barely) change.

Prints: chunks/s of the embedder alone and of the whole pipeline (load, chunk, embed, write the
store, in the indexer's batches of files) and their ratio, the full-index time of a generated tree
of N Markdown files, and the time of a re-sync of the same tree unchanged and with one file
changed, each as a fraction of the full index (target for the unchanged re-sync: at most 2 %).
Runs in-process with the embedded backends (ONNX embedder, LanceDB) so that it measures the
indexer, not the broker:

    PYTHONPATH=. HINDSIGHT_MODELS_DIR=... python bench/index_throughput.py --files 1000
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from services.indexer.chunking import chunk_text
from services.indexer.pipeline import sync_root
from shared.contracts import IndexRequest, ScanReport
from shared.embedding import OnnxEmbedder
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


def timed_sync(root: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings) -> ScanReport:
    return sync_root(IndexRequest(job_id="bench", root=str(root)), store, embedder, settings)


def embedder_alone(root: Path, embedder: OnnxEmbedder, settings: Settings, sample: int) -> tuple[int, float]:
    """Chunk (a sample of) the tree, then time only the embedding of those chunks."""
    passages: list[str] = []
    for path in sorted(root.rglob("*.md"))[:sample]:
        text = path.read_text()
        spans = chunk_text(text, embedder.token_spans, settings.chunk_tokens, settings.chunk_overlap)
        passages += [text[s.start : s.end] for s in spans]
    started = time.perf_counter()
    embedder.embed_documents(passages)
    return len(passages), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--embed-sample", type=int, default=200, help="files whose chunks time the embedder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hindsight-bench-") as tmp:
        root = Path(tmp) / "tree"
        settings = Settings(data_dir=Path(tmp) / "data", roots=[root])
        embedder = OnnxEmbedder(settings.embedder_dir, settings.onnx_threads, settings.embed_batch_size)
        store = LanceDBStore(settings.store_dir, embedder.dimension)
        write_tree(root, args.files)

        chunks, embed_s = embedder_alone(root, embedder, settings, args.embed_sample)
        full = timed_sync(root, store, embedder, settings)
        unchanged = timed_sync(root, store, embedder, settings)
        changed_file = sorted(root.rglob("*.md"))[args.files // 2]
        changed_file.write_text(changed_file.read_text() + "\nOne more sentence about crumb.\n")
        one_changed = timed_sync(root, store, embedder, settings)

    print(
        f"tree: {args.files} Markdown files, {full.chunks} chunks ({settings.chunk_tokens} tokens, "
        f"overlap {settings.chunk_overlap}), embedder {embedder.name}"
    )
    print(f"embedder alone:      {chunks / embed_s:8.1f} chunks/s ({chunks} chunks in {embed_s:.2f}s)")
    end_to_end = full.chunks / full.elapsed_s
    print(
        f"end to end (index):  {end_to_end:8.1f} chunks/s ({full.elapsed_s:.2f}s) = "
        f"{100 * end_to_end / (chunks / embed_s):.0f}% of the embedder alone"
    )
    share = 100 * unchanged.elapsed_s / full.elapsed_s
    print(
        f"re-sync, unchanged:  {unchanged.elapsed_s:8.3f}s = {share:.2f}% "
        f"of the full index (target <= 2%); embedded {unchanged.chunks} chunks"
    )
    print(
        f"re-sync, 1 changed:  {one_changed.elapsed_s:8.3f}s = "
        f"{100 * one_changed.elapsed_s / full.elapsed_s:.2f}% of the full index; "
        f"embedded {one_changed.chunks} chunks ({one_changed.changed} changed)"
    )


if __name__ == "__main__":
    main()
