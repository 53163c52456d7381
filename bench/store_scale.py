"""Dense search on LanceDB at 10k, 100k and 1M chunks: the exact scan against ANN indexes, with recall.

Run (about 25 min for the three sizes on 2 cores)::

    PYTHONPATH=. python bench/store_scale.py --corpus ../shared/eval/pyfaq-dev \\
        --queries bench/sets/debian-faq bench/sets/zsh-faq --sizes 10000 100000 1000000

Vectors are real where it matters: the corpus's sections (the first ``--base``) embedded by the
product's embedder, and the questions of every set given embedded as queries. A library of N chunks
remixes them (row i: the unit vector of ``base[a] + 0.5 base[b] + 0.05 noise``, a and b drawn at
random), so its neighbourhoods look like real text's rather than uniform noise, at any size; each
row's text is its first base section's. The library is written through the product's store
(``LanceDBStore.replace_documents``, documents of 10 chunks), then each question asks for
``--pool`` (the product's dense pool, 100) nearest chunks:

- exactly (every chunk's vector, the index bypassed: what the store did before it had an index);
- through the store's own ``dense_search`` (its index where it trained one), with recall@50: the
  share of the exact search's first 50 chunks found in its first 50;
- with ``--explore``, through each ANN index and search setting of ``searches_for`` (``nprobes``,
  ``refine_factor``, ``ef``), built on the same table, reading the same columns: build seconds,
  p50/p95 ms and recall@50.

Printed per size: write time and chunks/s (the store trains its own vector index at the end of the
write where the library is large enough), disk, the process's peak memory, then one line per search:
the exact scan, the store's own ``dense_search``, and with ``--explore`` the settings explored.
A question runs up to five dense legs, so its dense search costs about five times one line's p50.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lancedb.index import IvfHnswSq, IvfPq

from shared.backends import create_embedder
from shared.contracts import Chunk, Document, SourceKind
from shared.settings import Settings
from shared.stores.lancedb_store import CHUNK_COLUMNS, LanceDBStore, vector_index_partitions

CHUNKS_PER_DOCUMENT = 10
WRITE_DOCUMENTS = 2_000
RECALL_AT = 50
INDEX_CONFIGS: dict[str, type[IvfHnswSq] | type[IvfPq]] = {"IVF_HNSW_SQ": IvfHnswSq, "IVF_PQ": IvfPq}


@dataclass(frozen=True)
class AnnSearch:
    """An index to build and how to search it."""

    index_type: str
    partitions: int  # 0: the store's own index, as the store trained it
    nprobes: int
    refine_factor: int | None = None
    ef: int | None = None
    sample_rate: int = 256  # training vectors per partition (LanceDB's default)

    @property
    def label(self) -> str:
        refine = f" refine {self.refine_factor}" if self.refine_factor else ""
        ef = f" ef {self.ef}" if self.ef else ""
        sample = f" sample {self.sample_rate}" if self.sample_rate != 256 else ""
        index = (
            f"{self.index_type} {self.partitions} partitions{sample}" if self.partitions else "store's index"
        )
        return f"{index}, nprobes {self.nprobes}{refine}{ef}"


def read_jsonl(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def base_texts(corpus: Path, count: int) -> list[str]:
    rows = read_jsonl(corpus / "corpus.jsonl")[:count]
    return [f"{row.get('title', '')}\n{row['text']}"[:1500] for row in rows]


def query_texts(sets: Sequence[Path]) -> list[str]:
    return [row["text"] for folder in sets for row in read_jsonl(folder / "queries.jsonl")]


def remixed(base: np.ndarray, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` unit vectors mixed from two base rows and noise, and the first base row of each."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, len(base), count)
    second = rng.integers(0, len(base), count)
    noise = rng.standard_normal((count, base.shape[1])).astype(np.float32) * 0.05
    mixed = base[first] + 0.5 * base[second] + noise
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    return mixed.astype(np.float32), first


def write_library(store: LanceDBStore, vectors: np.ndarray, origin: np.ndarray, texts: list[str]) -> float:
    """Write the library in batches of documents; the seconds it took."""
    started = time.perf_counter()
    per_write = WRITE_DOCUMENTS * CHUNKS_PER_DOCUMENT
    for first in range(0, len(vectors), per_write):
        last = min(first + per_write, len(vectors))
        documents, chunks = [], []
        for row in range(first, last, CHUNKS_PER_DOCUMENT):
            uri = f"/library/thread-{row}.md"
            document = Document(id=f"d{row}", source_uri=uri, kind=SourceKind.MARKDOWN, title=f"Thread {row}",
                                content_hash=f"h{row}")  # fmt: skip
            documents.append(document)
            for ordinal, index in enumerate(range(row, min(row + CHUNKS_PER_DOCUMENT, last))):
                text = texts[origin[index]]
                chunks.append(Chunk(id=f"{document.id}:{ordinal}", document_id=document.id, ordinal=ordinal,
                                    text=text, char_start=0, char_end=len(text), title=document.title,
                                    source_uri=document.source_uri, kind=SourceKind.MARKDOWN))  # fmt: skip
        store.replace_documents(documents, chunks, vectors[first:last])
    store.refresh_indexes()
    return time.perf_counter() - started


def timed(
    search: Callable[[np.ndarray], list[str]], queries: np.ndarray
) -> tuple[list[list[str]], list[float]]:
    """Each query's result ids and milliseconds (after one warm-up query)."""
    search(queries[0])
    results, times = [], []
    for query in queries:
        started = time.perf_counter()
        results.append(search(query))
        times.append((time.perf_counter() - started) * 1000)
    return results, times


def exact_scan(store: LanceDBStore, query: np.ndarray, pool: int) -> list[str]:
    """The ids of the ``pool`` chunks nearest ``query`` by every chunk's vector, the index bypassed."""
    request = store._chunks.search(query.tolist()).metric("cosine").bypass_vector_index().limit(pool)
    return [row["id"] for row in request.select([*CHUNK_COLUMNS, "_distance"]).to_list()]


def recall(exact: list[list[str]], approximate: list[list[str]]) -> float:
    shares = [
        len(set(e[:RECALL_AT]) & set(a[:RECALL_AT])) / max(1, len(e[:RECALL_AT]))
        for e, a in zip(exact, approximate, strict=True)
    ]
    return statistics.mean(shares)


def line(label: str, times: list[float], extra: str = "") -> str:
    p95 = statistics.quantiles(times, n=20)[-1]
    return f"  {label:<52} p50 {statistics.median(times):7.1f} ms  p95 {p95:7.1f} ms{extra}"


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def measure(
    size: int, base: np.ndarray, texts: list[str], queries: np.ndarray, pool: int, searches: list[AnnSearch]
) -> None:
    vectors, origin = remixed(base, size, seed=size)
    with tempfile.TemporaryDirectory(prefix="hindsight-scale-") as folder:
        store = LanceDBStore(Path(folder), base.shape[1])
        seconds = write_library(store, vectors, origin, texts)
        del vectors
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{size:,} chunks: written in {seconds:.1f} s ({size / seconds:,.0f} chunks/s), "
              f"{disk_mb(Path(folder)):,.0f} MB on disk, peak memory {peak:,.0f} MB")  # fmt: skip
        table = store._chunks
        exact, times = timed(lambda query: exact_scan(store, query, pool), queries)
        print(line("exact scan (every chunk's vector)", times))
        found, times = timed(lambda q: [h.chunk.id for h in store.dense_search(q, pool)], queries)
        indexed = store._vector_index_partitions()
        how = f"index of {indexed} partitions" if indexed else "no index: the exact scan"
        print(
            line(
                f"the store's dense_search ({how})", times, f"  recall@{RECALL_AT} {recall(exact, found):.3f}"
            )
        )
        built: tuple[str, int, int] = ("store", 0, 256)
        for search in sorted(searches, key=lambda search: search.partitions > 0):
            if search.partitions and built != (search.index_type, search.partitions, search.sample_rate):
                for index in table.list_indices() if built[1] == 0 else []:
                    if "vector" in index.columns:  # the explored indexes replace the store's own
                        table.drop_index(index.name)
                started = time.perf_counter()
                config = INDEX_CONFIGS[search.index_type](
                    distance_type="cosine", num_partitions=search.partitions, sample_rate=search.sample_rate
                )
                table.create_index("vector", config=config, replace=True, name="explored")
                built = (search.index_type, search.partitions, search.sample_rate)
                took = time.perf_counter() - started
                print(f"  {search.label.split(',')[0]} built in {took:.1f} s")

            def ann(query: np.ndarray, search: AnnSearch = search) -> list[str]:
                request = table.search(query.tolist()).metric("cosine").nprobes(search.nprobes)
                if search.refine_factor:
                    request = request.refine_factor(search.refine_factor)
                if search.ef:
                    request = request.ef(search.ef)
                rows = request.limit(pool).select([*CHUNK_COLUMNS, "_distance"]).to_list()
                return [row["id"] for row in rows]

            found, times = timed(ann, queries)
            print(line(search.label, times, f"  recall@{RECALL_AT} {recall(exact, found):.3f}"))


def searches_for(size: int) -> list[AnnSearch]:
    """Partitions about √N (LanceDB's guidance), each searched at a few depths: more partitions
    probed, candidates re-scored on the full vectors (``refine_factor``), a wider HNSW beam (``ef``)."""
    partitions = max(8, int(size**0.5))
    hnsw = [(20, None, None), (40, None, None), (80, None, None), (40, 2, None), (80, 2, None), (80, 2, 300)]
    return [
        *(AnnSearch("IVF_HNSW_SQ", partitions, nprobes, refine, ef) for nprobes, refine, ef in hnsw),
        AnnSearch("IVF_PQ", partitions, 40, 10),
    ]


def depths_for(size: int) -> list[AnnSearch]:
    """Where the store's own index loses recall: its index searched deeper (more partitions probed,
    more candidates re-scored, a wider HNSW beam), and the same partitions trained on four times the
    sample (LanceDB's k-means sees 256 vectors per partition by default)."""
    partitions = vector_index_partitions(size)
    depths = [(80, 2, None), (80, 10, None), (80, 2, 400), (160, 2, None), (320, 2, None)]
    return [
        *(AnnSearch("IVF_HNSW_SQ", 0, nprobes, refine, ef) for nprobes, refine, ef in depths),
        *(AnnSearch("IVF_HNSW_SQ", partitions, n, 2, sample_rate=1024) for n in (80, 160)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, required=True, help="a BEIR folder: its sections are the base texts"
    )
    parser.add_argument(
        "--queries", type=Path, nargs="*", default=[], help="more BEIR folders whose questions to ask"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--base", type=int, default=4000, help="sections embedded as the base vectors")
    parser.add_argument("--max-queries", type=int, default=150)
    parser.add_argument(
        "--explore", action="store_true", help="also build and search the ANN settings explored"
    )
    parser.add_argument(
        "--depths", action="store_true", help="search the store's own index deeper, and trained on more"
    )
    parser.add_argument("--pool", type=int, default=100, help="hits per dense search (the product's pool)")
    args = parser.parse_args()
    embedder = create_embedder(Settings())  # HINDSIGHT_MODELS_DIR as for the product
    texts = base_texts(args.corpus, args.base)
    started = time.perf_counter()
    base = embedder.embed_documents(texts)
    questions = query_texts([args.corpus, *args.queries])[: args.max_queries]
    queries = np.stack([embedder.embed_query(q) for q in questions])
    took = time.perf_counter() - started
    print(f"base: {len(texts)} sections and {len(questions)} questions embedded in {took:.1f} s")
    for size in args.sizes:
        searches = [*(searches_for(size) if args.explore else []), *(depths_for(size) if args.depths else [])]
        measure(size, base, texts, queries, args.pool, searches)


if __name__ == "__main__":
    main()
