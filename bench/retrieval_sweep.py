"""Offline comparison of dense-scoring and fusion rules over the legs ``bench/retrieval_legs.py`` dumps.

Run: ``PYTHONPATH=. python bench/retrieval_sweep.py bench/sets/debian-faq bench/sets/r-faq
bench/sets/zsh-faq bench/sets/perlfaq [--chunking 200/40 --chunking 240/40]``

Every configuration sees the same hits, so the differences are the rules' alone. The dense leg is
recomputed from the stored vectors (exhaustive cosine, as the store searches), then cut to the
leg's pool; the lead bonus, the document centroid's share and the α-blend are the product's own
functions (``in_documents``, ``alpha_blend`` and ``min_max`` of ``services.retriever.fusion``),
called with each chunk number's stand-in chunk (its id the number, its document and ordinal the
stored ones), each document's centroid the unit mean of its stored chunk vectors, as the store
computes it.
Parameters are chosen by leave-one-set-out cross-validation: for each set, the value with the
best mean over the other sets, scored on the held-out one ("held out" rows). nDCG@10 per set,
the mean and the worst set.
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from bench.retrieval_legs import dump_set
from bench.retrieval_quality import DEFAULT_CACHE, ndcg_at
from services.retriever import fusion
from shared.contracts import Chunk, SourceKind
from shared.embedding import OnnxEmbedder
from shared.interfaces import Hit
from shared.settings import Settings
from shared.stores.records import centroids

Leg = list[tuple[int, float]]  # (chunk number, score), best first
Scores = dict[str, float]  # nDCG@10 per set
QUERY_VECTORS = {"int8": "q_int8", "fp32 query": "q_fp32"}  # the product's embedder; sentence-transformers
LEXICAL_LEGS = ("bm25", "exact")  # the product's names of the lexical legs, in the order legs list them


@dataclass
class LegSet:
    """One set's dump with its dense score matrices (query × chunk)."""

    name: str
    dump: dict[str, Any]
    doc_of_chunk: list[str]  # corpus id per chunk
    ordinals: np.ndarray
    scores: dict[str, np.ndarray]  # by query precision: "int8" (the product's), "fp32 query"
    centroid_scores: dict[str, np.ndarray]  # the same, query × the document of each chunk's centroid
    reference: list[list[str]]  # the whole-document fp32 ranking per query (corpus ids)
    chunk_centroids: np.ndarray  # row i: the centroid of chunk i's document
    chunks: list[Chunk]  # chunk i as the product's fusion sees it: id "i", its document and ordinal

    @property
    def qrels(self) -> list[dict[str, int]]:
        return [self.dump["qrels"][q] for q in self.dump["query_ids"]]


def load(path: Path) -> LegSet:
    dump = pickle.loads(path.read_bytes())
    to_id = dump["file_to_id"]
    doc_of_chunk = [to_id[name] for name in dump["files"]]
    vectors = dump["vectors"].T
    scores = {kind: dump[key] @ vectors for kind, key in QUERY_VECTORS.items()}
    chunk_centroids = centroid_of_chunk(doc_of_chunk, dump["vectors"])
    centroid_scores = {
        "int8": dump["q_int8"] @ chunk_centroids.T,
        "fp32 query": dump["q_fp32"] @ chunk_centroids.T,
    }
    names = [to_id[name] for name in dump["reference_names"]]
    reference_scores = dump["q_fp32"] @ dump["reference_vectors"].T
    reference = [[names[i] for i in np.argsort(-row)[:100]] for row in reference_scores]
    chunks = stand_in_chunks(doc_of_chunk, dump["ordinals"], dump["files"])
    parts = (doc_of_chunk, dump["ordinals"], scores, centroid_scores, reference, chunk_centroids, chunks)
    return LegSet(dump["set"], dump, *parts)


def stand_in_chunks(doc_of_chunk: list[str], ordinals: np.ndarray, files: list[str]) -> list[Chunk]:
    """Chunk ``i`` as the product's fusion sees it: id ``"i"``, its document and its ordinal."""
    rows = zip(doc_of_chunk, ordinals.tolist(), files, strict=True)
    return [
        Chunk(
            id=str(i), document_id=document, ordinal=int(ordinal), text="", char_start=0, char_end=0,
            title="", source_uri=file, kind=SourceKind.TEXT,
        )
        for i, (document, ordinal, file) in enumerate(rows)
    ]  # fmt: skip


def centroid_of_chunk(doc_of_chunk: list[str], vectors: np.ndarray) -> np.ndarray:
    """Row ``i``: the centroid of chunk ``i``'s document (``shared.stores.records.centroids``)."""
    found = centroids(doc_of_chunk, vectors)
    return np.stack([found[document] for document in doc_of_chunk])


def dense_leg(s: LegSet, q: int, pool: int, bonus: float, centroid_weight: float, kind: str = "int8") -> Leg:
    """The store's ``pool`` best chunks for question ``q``, scored by :func:`in_documents`, re-sorted."""
    return leg_of(s, s.scores[kind][q], s.centroid_scores[kind][q], pool, bonus, centroid_weight)


def leg_of(s: LegSet, cosines: np.ndarray, whole: np.ndarray, pool: int, bonus: float, weight: float) -> Leg:
    """The ``pool`` chunks of highest ``cosines`` (one per chunk; ``whole``: to each chunk's
    document centroid), scored by :func:`dense_scored`, best first."""
    return dense_scored(s, np.argsort(-cosines, kind="stable")[:pool], cosines, whole, bonus, weight)


def dense_scored(
    s: LegSet, chunks: np.ndarray, cosines: np.ndarray, whole: np.ndarray, bonus: float, weight: float
) -> Leg:
    """``chunks`` scored by the product's dense rule (``fusion.in_documents``: the lead bonus and
    the document centroid's share), best first."""
    found = [Hit(chunk=s.chunks[i], score=float(cosines[i])) for i in chunks.tolist()]
    centroid_scores = {s.doc_of_chunk[i]: float(whole[i]) for i in chunks.tolist()}
    return numbered(fusion.in_documents(found, bonus, weight, centroid_scores))


def numbered(hits: Sequence[Hit]) -> Leg:
    return [(int(hit.chunk.id), hit.score) for hit in hits]


def product_legs(s: LegSet, dense: Leg | None, lexical: Sequence[Leg]) -> dict[str, list[Hit]]:
    """The legs as the product's fusion takes them, by the product's leg names."""
    named = ({"dense:0": dense} if dense is not None else {}) | dict(zip(LEXICAL_LEGS, lexical, strict=True))
    return {name: [Hit(chunk=s.chunks[i], score=score) for i, score in leg] for name, leg in named.items()}


def alpha_blend(s: LegSet, dense: Leg, lexical: Sequence[Leg], alpha: float) -> list[int]:
    """The product's α-blend (``fusion.alpha_blend``) of the dense and lexical legs; chunk numbers,
    best first."""
    return [int(c.chunk.id) for c in fusion.alpha_blend(product_legs(s, dense, lexical), alpha)]


def best_lexical(s: LegSet, lexical: Sequence[Leg]) -> dict[int, float]:
    """Each chunk's lexical part of the product's α-blend (its best min-max scaled score over BM25
    and exact): the blend with α 0 leaves nothing else."""
    blended = fusion.alpha_blend(product_legs(s, None, lexical), 0.0)
    return {int(c.chunk.id): c.fused_score for c in blended}


def scaled(leg: Leg) -> dict[int, float]:
    """A leg's scores min-max scaled as the product's fusion scales them (``fusion.min_max``)."""
    return dict(zip((i for i, _ in leg), fusion.min_max([v for _, v in leg]), strict=True)) if leg else {}


def documents(chunks: Sequence[int], doc_of_chunk: Sequence[str]) -> list[str]:
    """A document ranks where its best chunk ranks."""
    return list(dict.fromkeys(doc_of_chunk[i] for i in chunks))


Rule = Callable[[LegSet, int], list[str]]  # (set, query number) -> ranked corpus ids


def score(sets: list[LegSet], rule: Rule) -> Scores:
    return {
        s.name: sum(ndcg_at(rule(s, q), rel, 10) for q, rel in enumerate(s.qrels)) / len(s.qrels)
        for s in sets
    }


def dense_rule(bonus: float, centroid_weight: float, kind: str = "int8", depth: int = 200) -> Rule:
    def rule(s: LegSet, q: int) -> list[str]:
        leg = dense_leg(s, q, depth, bonus, centroid_weight, kind)
        return documents([i for i, _ in leg], s.doc_of_chunk)

    return rule


def fused_rule(
    bonus: float,
    centroid_weight: float,
    alpha: float | Callable[[LegSet, int], float],
    pool: int,
    exact_pool: int,
    kind: str = "int8",
) -> Rule:
    """The product's search: dense and BM25 at ``pool``, the exact leg at ``exact_pool`` files."""

    def rule(s: LegSet, q: int) -> list[str]:
        dense = dense_leg(s, q, pool, bonus, centroid_weight, kind)
        exact_depth = min(p for p in s.dump["exact"] if p >= min(pool, exact_pool))
        lexical = [s.dump["bm25"][q][:pool], s.dump["exact"][exact_depth][q][:pool]]
        weight = alpha(s, q) if callable(alpha) else alpha
        return documents(alpha_blend(s, dense, lexical, weight), s.doc_of_chunk)

    return rule


def leave_one_out(grid: dict[Any, Scores]) -> tuple[Scores, dict[str, Any]]:
    """Per held-out set: the parameter with the best mean over the other sets, and its held-out score."""
    names = list(next(iter(grid.values())))
    held, chosen = {}, {}
    for out in names:
        best = max(grid, key=lambda p: sum(v for k, v in grid[p].items() if k != out))
        held[out], chosen[out] = grid[best][out], best
    return held, chosen


def print_row(name: str, per_set: Scores, note: str = "") -> None:
    worst = min(per_set, key=lambda k: per_set[k])
    mean = sum(per_set.values()) / len(per_set)
    cells = " | ".join(f"{v:.3f}" for v in per_set.values())
    print(f"| {name} | {cells} | {mean:.3f} | {per_set[worst]:.3f} ({worst}) |{' ' + note if note else ''}")


def print_header(title: str, sets: list[LegSet]) -> None:
    print(f"\n{title}\n\n| run | {' | '.join(s.name for s in sets)} | mean | worst |")
    print("|---|" + "---|" * (len(sets) + 2))


def print_held_out(name: str, grid: dict[Any, Scores]) -> None:
    held, chosen = leave_one_out(grid)
    print_row(name, held, "chosen per held-out set: " + ", ".join(f"{k} {v}" for k, v in chosen.items()))


def sweep(sets: list[LegSet], label: str, settings: Settings) -> None:
    """The dense leg's rules, then the fusion's, for one chunking; the product's settings first."""
    bonus, weight, alpha = (
        settings.retrieval.dense_lead_bonus,
        settings.retrieval.dense_centroid_weight,
        settings.retrieval.fusion_alpha,
    )
    pool, exact_pool = settings.retrieval.pool_precise, settings.retrieval.pool_exact
    print_header(f"Dense leg, chunks {label} (pool 200)", sets)
    print_row("whole-document fp32 (reference)", score(sets, lambda s, q: s.reference[q]))
    print_row(
        f"the product's leg (lead bonus {bonus:g}, centroid {weight:g})",
        score(sets, dense_rule(bonus, weight)),
    )
    print_row("dense, as stored (best chunk)", score(sets, dense_rule(0.0, 0.0)))
    print_row("lead bonus 0.2, no centroid (former leg)", score(sets, dense_rule(0.2, 0.0)))
    dense = {
        (b, w): score(sets, dense_rule(b, w))
        for b, w in product([0.0, 0.1, 0.2, 0.25, 0.3], [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    }
    for (b, w), per_set in dense.items():
        if b == bonus or w == weight:
            print_row(f"lead bonus {b:g}, centroid {w:g}", per_set)
    print_row("same as the product's, fp32 query", score(sets, dense_rule(bonus, weight, "fp32 query")))
    print_held_out("(lead bonus, centroid) held out", dense)
    reference = score(sets, lambda s, q: s.reference[q])
    holding = [p for p, per_set in dense.items() if all(per_set[k] >= reference[k] for k in per_set)]
    if holding:
        best = max(holding, key=lambda p: sum(dense[p].values()))
        print_row(f"best mean at or above the reference on every set: {best}", dense[best])

    print_header(f"Fusion, chunks {label}", sets)
    print_row(
        f"the product's (α {alpha:g}, bonus {bonus:g}, centroid {weight:g}, pool {pool}, exact {exact_pool})",
        score(sets, fused_rule(bonus, weight, alpha, pool, exact_pool)),
    )
    print_row(
        "α 0.8, bonus 0.2, no centroid (former default)", score(sets, fused_rule(0.2, 0.0, 0.8, 100, 50))
    )
    grid = {
        (b, w, a): score(sets, fused_rule(b, w, a, pool, exact_pool))
        for b, w, a in product([0.2, 0.25, 0.3], [0.0, 0.2, 0.3, 0.4, 0.5, 0.6], [0.7, 0.75, 0.8, 0.85, 0.9])
    }
    for (b, w, a), per_set in grid.items():
        if (b, w) == (bonus, weight) or (b, a) == (bonus, alpha):
            print_row(f"α {a:g}, bonus {b:g}, centroid {w:g}", per_set)
    print_held_out(f"(bonus, centroid, α) held out, pool {pool}, exact {exact_pool}", grid)
    for pool_size, exact_size in [(50, 50), (200, 50)]:
        print_row(
            f"the product's at pool {pool_size}, exact {exact_size}",
            score(sets, fused_rule(bonus, weight, alpha, pool_size, exact_size)),
        )
    print_row(
        "the product's, fp32 query",
        score(sets, fused_rule(bonus, weight, alpha, pool, exact_pool, "fp32 query")),
    )


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("dataset_dirs", nargs="+", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--chunking", action="append", default=[], help="TOKENS/OVERLAP (default: settings)")
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    for chunking in args.chunking or [f"{settings.indexing.chunk_tokens}/{settings.indexing.chunk_overlap}"]:
        tokens, overlap = (int(part) for part in chunking.split("/"))
        chunked = settings.replace(chunk_tokens=tokens, chunk_overlap=overlap)
        sets = [load(dump_set(folder, args.cache_dir, chunked, embedder)) for folder in args.dataset_dirs]
        sweep(sets, chunking, chunked)


if __name__ == "__main__":
    main()
