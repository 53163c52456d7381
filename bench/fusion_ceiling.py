"""What fusing the product's own legs can reach, measured offline on ``bench/retrieval_legs.py``'s dumps.

Run: ``PYTHONPATH=. python bench/fusion_ceiling.py bench/sets/debian-faq bench/sets/r-faq
bench/sets/zsh-faq bench/sets/perlfaq ../shared/eval/pyfaq-dev``

Next to the product's dense leg and its fusion (the same rows as ``bench/retrieval_sweep.py``),
each rule below uses only what the legs found, with the product's dense scoring:

- **every candidate scored by the dense rule**: a BM25 or exact hit outside the dense pool gets the
  score the dense leg would give it (scaled by the leg's own bounds, clipped to [0, 1]), not 0;
- **dense feedback**: the question's vector moved towards the centroids of the fused ranking's
  first documents (Rocchio), the dense leg searched again and fused again;
- **learned linear fusion**: a weight per feature of each candidate chunk (the legs' scaled scores,
  its raw cosine, its document's centroid cosine, whether it is the lead, its document's best BM25
  score and how many chunks of it each leg found), a document scored by its best chunk; the weights
  found by coordinate ascent on nDCG@10 over the other sets and scored on the held-out one;
- **α per question, in hindsight**: each question's best α of 0.3-1.0, an upper bound that no
  question-time rule reaches.

nDCG@10 per set, the mean and the worst set.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.retrieval_legs import dump_set
from bench.retrieval_quality import DEFAULT_CACHE, ndcg_at
from bench.retrieval_sweep import (
    Leg,
    LegSet,
    Scores,
    alpha_blend,
    best_lexical,
    dense_leg,
    dense_rule,
    dense_scored,
    documents,
    leg_of,
    load,
    print_header,
    print_row,
    scaled,
    score,
)
from shared.embedding import OnnxEmbedder
from shared.settings import Settings

FEATURES = (
    "dense",
    "best lexical",
    "bm25",
    "exact",
    "cosine",
    "centroid",
    "lead",
    "document's best bm25",
    "document's dense hits",
    "document's bm25 hits",
)
FEATURE_GROUPS = {
    "dense, best lexical": (0, 1),
    "dense, bm25, exact": (0, 2, 3),
    "+ cosine, centroid, lead": (0, 1, 4, 5, 6),
    "+ the document's best bm25 and hit counts": (0, 1, 7, 8, 9),
    "all features": tuple(range(len(FEATURES))),
}
ASCENT_STEPS = (0.2, 0.05, 0.01)
ASCENT_MOVES = tuple(k for k in range(-10, 11) if k)
ORACLE_ALPHAS = tuple(a / 10 for a in range(3, 11))
DISCOUNTS = 1 / np.log2(np.arange(2, 12))


@dataclass(frozen=True)
class Rules:
    """The product's settings that every rule here starts from."""

    bonus: float
    centroid_weight: float
    alpha: float
    pool: int
    exact_pool: int

    def lexical(self, s: LegSet, q: int) -> list[Leg]:
        return [s.dump["bm25"][q][: self.pool], s.dump["exact"][self.exact_pool][q][: self.pool]]

    def dense(self, s: LegSet, q: int) -> Leg:
        return dense_leg(s, q, self.pool, self.bonus, self.centroid_weight)

    def fused(self, s: LegSet, q: int, alpha: float | None = None) -> list[str]:
        weight = self.alpha if alpha is None else alpha
        return documents(alpha_blend(s, self.dense(s, q), self.lexical(s, q), weight), s.doc_of_chunk)


@dataclass
class Candidates:
    """One question's candidate chunks (the legs' union) with their features, for linear rules."""

    features: np.ndarray  # chunk x FEATURES
    document: np.ndarray  # the row's document, numbered within the question
    gains: np.ndarray  # judged gain per numbered document
    ideal: float  # the ideal DCG@10 of the question's judgements

    def ndcg(self, weights: np.ndarray, columns: Sequence[int]) -> float:
        chunk_scores = self.features[:, columns] @ weights
        best = np.full(len(self.gains), -np.inf)
        np.maximum.at(best, self.document, chunk_scores)
        top = np.argsort(-best, kind="stable")[:10]
        return float((self.gains[top] * DISCOUNTS[: len(top)]).sum() / self.ideal) if self.ideal else 0.0


def scored_union(s: LegSet, q: int, rules: Rules) -> tuple[Leg, list[Leg], np.ndarray, np.ndarray]:
    """The dense leg, the lexical legs, their union's chunks and each one's dense part: its own
    score by the dense rule, scaled by the leg's bounds and clipped to [0, 1]."""
    dense, lexical = rules.dense(s, q), rules.lexical(s, q)
    union = np.array(list(dict.fromkeys([i for i, _ in dense] + [i for leg in lexical for i, _ in leg])))
    low, high = min(v for _, v in dense), max(v for _, v in dense)
    own = dict(
        dense_scored(
            s, union, s.scores["int8"][q], s.centroid_scores["int8"][q], rules.bonus, rules.centroid_weight
        )
    )
    dense_part = np.clip((np.array([own[i] for i in union.tolist()]) - low) / (high - low or 1.0), 0, 1)
    return dense, lexical, union, dense_part


def union_scored(rules: Rules) -> Callable[[LegSet, int], list[str]]:
    """The α-blend with every candidate's dense part its own score (:func:`scored_union`)."""

    def rule(s: LegSet, q: int) -> list[str]:
        _, lexical, union, dense_part = scored_union(s, q, rules)
        lexical_part = best_lexical(s, lexical)
        blended = rules.alpha * dense_part + (1 - rules.alpha) * np.array(
            [lexical_part.get(i, 0.0) for i in union]
        )
        return documents(union[np.argsort(-blended, kind="stable")].tolist(), s.doc_of_chunk)

    return rule


def dense_feedback(rules: Rules, first: int, beta: float) -> Callable[[LegSet, int], list[str]]:
    """Search again with ``q + beta × mean(centroids of the fused ranking's first documents)``."""

    def rule(s: LegSet, q: int) -> list[str]:
        head = rules.fused(s, q)[:first]
        first_chunks = [s.doc_of_chunk.index(name) for name in head]  # any chunk holds its centroid
        moved = s.dump["q_int8"][q] + beta * s.chunk_centroids[first_chunks].mean(axis=0)
        moved /= np.linalg.norm(moved)
        cosines, whole = s.dump["vectors"] @ moved, s.chunk_centroids @ moved
        dense = leg_of(s, cosines, whole, rules.pool, rules.bonus, rules.centroid_weight)
        return documents(alpha_blend(s, dense, rules.lexical(s, q), rules.alpha), s.doc_of_chunk)

    return rule


def candidates(s: LegSet, q: int, rules: Rules) -> Candidates:
    """The union of the legs' chunks with :data:`FEATURES` (missing legs 0, dense within its bounds)."""
    dense, lexical, union, dense_part = scored_union(s, q, rules)
    bm25, exact = (scaled(leg) for leg in lexical)
    names = [s.doc_of_chunk[i] for i in union]
    numbers = {name: n for n, name in enumerate(dict.fromkeys(names))}
    best_bm25: dict[str, float] = {}
    dense_hits: dict[str, int] = {}
    bm25_hits: dict[str, int] = {}
    for i, v in bm25.items():
        name = s.doc_of_chunk[i]
        best_bm25[name] = max(best_bm25.get(name, 0.0), v)
        bm25_hits[name] = bm25_hits.get(name, 0) + 1
    for i, _ in dense:
        dense_hits[s.doc_of_chunk[i]] = dense_hits.get(s.doc_of_chunk[i], 0) + 1
    rows = [
        [
            d,
            max(bm25.get(i, 0.0), exact.get(i, 0.0)),
            bm25.get(i, 0.0),
            exact.get(i, 0.0),
            s.scores["int8"][q][i],
            s.centroid_scores["int8"][q][i],
            float(s.ordinals[i] == 0),
            best_bm25.get(name, 0.0),
            math.log1p(dense_hits.get(name, 0)),
            math.log1p(bm25_hits.get(name, 0)),
        ]
        for i, d, name in zip(union.tolist(), dense_part, names, strict=True)
    ]
    relevant = s.qrels[q]
    gains = np.array([relevant.get(name, 0) for name in numbers], dtype=float)
    ideal = sorted(relevant.values(), reverse=True)[:10]
    return Candidates(
        np.array(rows, dtype=float),
        np.array([numbers[name] for name in names]),
        gains,
        sum(g * DISCOUNTS[k] for k, g in enumerate(ideal)),
    )


def mean_ndcg(questions: Sequence[Candidates], weights: np.ndarray, columns: Sequence[int]) -> float:
    return sum(c.ndcg(weights, columns) for c in questions) / len(questions)


def ascend(training: Sequence[Sequence[Candidates]], columns: Sequence[int], start: np.ndarray) -> np.ndarray:
    """Coordinate ascent on the mean over the training sets of their nDCG@10: each weight in turn
    moves to the best of ``±1..10`` steps from where it stands (a line search, so a plateau of
    equal rankings is crossed), with each of :data:`ASCENT_STEPS` from coarse to fine, the whole
    pass repeated until no move gains. The first weight (dense) stays as it starts, since scaling
    every weight changes no ranking."""

    def objective(weights: np.ndarray) -> float:
        return sum(mean_ndcg(questions, weights, columns) for questions in training) / len(training)

    weights, best = start.astype(float), objective(start)
    improved = True
    while improved:
        improved = False
        for step in ASCENT_STEPS:
            for j in range(1, len(columns)):
                trials = [weights + moves * step * np.eye(len(columns))[j] for moves in ASCENT_MOVES]
                value, trial = max(((objective(t), k) for k, t in enumerate(trials)), key=lambda vk: vk[0])
                if value > best + 1e-9:
                    weights, best, improved = trials[trial], value, True
    return weights


def learned_held_out(
    features: dict[str, list[Candidates]], columns: Sequence[int], alpha: float
) -> tuple[Scores, dict[str, np.ndarray]]:
    """Per held-out set: weights ascended on the other sets (from the product's α-blend), its score."""
    start = np.zeros(len(columns))
    start[0], start[1] = alpha, 1 - alpha  # dense and the first lexical column, as the product blends
    held, chosen = {}, {}
    for out in features:
        training = [questions for name, questions in features.items() if name != out]
        chosen[out] = ascend(training, columns, start)
        held[out] = mean_ndcg(features[out], chosen[out], columns)
    return held, chosen


def oracle_alpha(rules: Rules) -> Callable[[LegSet, int], float]:
    def per_question(s: LegSet, q: int) -> float:
        return max(ndcg_at(rules.fused(s, q, a), s.qrels[q], 10) for a in ORACLE_ALPHAS)

    return per_question


def report(sets: list[LegSet], rules: Rules) -> None:
    print_header("Fusion of the product's legs: what they can reach (nDCG@10)", sets)
    print_row("whole-document fp32 (reference)", score(sets, lambda s, q: s.reference[q]))
    print_row("the product's dense leg", score(sets, dense_rule(rules.bonus, rules.centroid_weight)))
    print_row(f"the product's fusion (α {rules.alpha:g})", score(sets, rules.fused))
    print_row("every candidate scored by the dense rule", score(sets, union_scored(rules)))
    for first, beta in [(1, 0.25), (3, 0.25), (3, 0.5)]:
        print_row(
            f"dense feedback from the first {first} fused, β {beta:g}",
            score(sets, dense_feedback(rules, first, beta)),
        )
    features = {s.name: [candidates(s, q, rules) for q in range(len(s.qrels))] for s in sets}
    for label, columns in FEATURE_GROUPS.items():
        held, chosen = learned_held_out(features, columns, rules.alpha)
        print_row(f"learned linear, held out: {label}", held)
        print(
            "  weights: "
            + "; ".join(
                f"{name} "
                + ", ".join(f"{FEATURES[c]} {w:.2f}" for c, w in zip(columns, weights, strict=True))
                for name, weights in chosen.items()
            )
        )
    oracle = oracle_alpha(rules)
    print_row(
        "α per question in hindsight (upper bound)",
        {s.name: sum(oracle(s, q) for q in range(len(s.qrels))) / len(s.qrels) for s in sets},
    )


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("dataset_dirs", nargs="+", type=Path)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    sets = [load(dump_set(folder, args.cache_dir, settings, embedder)) for folder in args.dataset_dirs]
    rules = Rules(
        settings.retrieval.dense_lead_bonus,
        settings.retrieval.dense_centroid_weight,
        settings.retrieval.fusion_alpha,
        settings.retrieval.pool_precise,
        settings.retrieval.pool_exact,
    )
    report(sets, rules)


if __name__ == "__main__":
    main()
