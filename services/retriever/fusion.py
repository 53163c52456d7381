"""Merge the legs' ranked lists into one candidate list: weighted RRF, or a min-max α-blend.

Every candidate keeps each leg's rank and score, so events and answers can say how it was found (a
dense leg's score is :func:`in_documents`' where the search applied it).
Leg names carry their family before a colon (``dense:0``, ``hyde``, ``bm25``, ``exact``); weights and
the α-blend work per family.
"""

from __future__ import annotations

from collections.abc import Mapping

from shared.contracts import Candidate
from shared.interfaces import Hit

DENSE_FAMILIES = frozenset({"dense", "hyde"})


def leg_family(leg: str) -> str:
    return leg.split(":", 1)[0]


def collect(legs: Mapping[str, list[Hit]]) -> dict[str, Candidate]:
    """One candidate per chunk with every leg's rank (from 1) and score; first-seen order kept."""
    candidates: dict[str, Candidate] = {}
    for leg, hits in legs.items():
        for rank, hit in enumerate(hits, start=1):
            candidate = candidates.setdefault(hit.chunk.id, Candidate(chunk=hit.chunk))
            if leg not in candidate.ranks:
                candidate.ranks[leg] = rank
                candidate.scores[leg] = hit.score
    return candidates


def ranked(candidates: dict[str, Candidate]) -> list[Candidate]:
    """Best first; ties keep first-seen order (``sorted`` is stable), so results are deterministic."""
    return sorted(candidates.values(), key=lambda c: c.fused_score, reverse=True)


def reciprocal_rank_fusion(
    legs: Mapping[str, list[Hit]], k: int, weights: Mapping[str, float] | None = None
) -> list[Candidate]:
    """Score each chunk by ``sum(w_family / (k + rank))`` over the legs that found it.

    ``weights`` maps a leg family to its weight (missing families weigh 1).
    """
    weights = weights or {}
    candidates = collect(legs)
    for candidate in candidates.values():
        candidate.fused_score = sum(
            weights.get(leg_family(leg), 1.0) / (k + rank) for leg, rank in candidate.ranks.items()
        )
    return ranked(candidates)


def min_max(scores: list[float]) -> list[float]:
    """Scale to [0, 1]; a leg whose scores are all equal gives every hit 1 (it found them all)."""
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def in_documents(
    hits: list[Hit], lead_bonus: float, centroid_weight: float, centroid_scores: Mapping[str, float]
) -> list[Hit]:
    """A dense leg scored with each hit's document, re-sorted: ``(1 - centroid_weight) × (cosine +
    lead_bonus for a document's lead chunk) + centroid_weight × the question's cosine to the
    document's centroid`` (``centroid_scores``, by document id; a document missing there gets its
    chunk's cosine).

    A document ranks by its best chunk, so the score says how well the chunk matches, how much the
    opening that carries the document's topic with its title is favoured, and how well the document
    as a whole matches: a later chunk that merely resembles the question no longer outranks another
    document that is about it. Both weights are measured per set in docs/decisions/retrieval.md;
    zeros leave the leg as the store ranked it.
    """
    if not lead_bonus and not centroid_weight:
        return hits

    def scored(hit: Hit) -> Hit:
        own = hit.score + (lead_bonus if hit.chunk.ordinal == 0 else 0.0)
        whole = centroid_scores.get(hit.chunk.document_id, hit.score)
        return Hit(chunk=hit.chunk, score=(1 - centroid_weight) * own + centroid_weight * whole)

    return sorted(map(scored, hits), key=lambda h: h.score, reverse=True)


def legs_agree(legs: Mapping[str, list[Hit]], top: int, min_shared: int) -> bool:
    """Whether the first dense leg's and BM25's ``top`` documents share at least ``min_shared``.

    When they share none, the keyword leg is matching something other than what the question means
    (or nothing at all), and blending it in lowered nDCG@10 on the measured sets; a plan without one
    of the two legs, or ``min_shared`` 0, always agrees.
    """
    dense, keyword = legs.get("dense:0"), legs.get("bm25")
    if min_shared <= 0 or not dense or not keyword:
        return True

    def documents(hits: list[Hit]) -> set[str]:
        return set(list(dict.fromkeys(hit.chunk.document_id for hit in hits))[:top])

    return len(documents(dense) & documents(keyword)) >= min_shared


def alpha_blend(legs: Mapping[str, list[Hit]], alpha: float) -> list[Candidate]:
    """``alpha * dense + (1 - alpha) * lexical`` over min-max normalised scores.

    Each leg's scores are normalised on their own; a chunk's dense part is its best normalised
    score over the dense legs (variations and HyDE), its lexical part the best over BM25 and
    exact matching, and a leg that missed the chunk contributes 0.
    """
    candidates = collect(legs)
    dense: dict[str, float] = {}
    lexical: dict[str, float] = {}
    for leg, hits in legs.items():
        if not hits:
            continue
        side = dense if leg_family(leg) in DENSE_FAMILIES else lexical
        for hit, normalised in zip(hits, min_max([h.score for h in hits]), strict=True):
            side[hit.chunk.id] = max(side.get(hit.chunk.id, 0.0), normalised)
    for chunk_id, candidate in candidates.items():
        candidate.fused_score = alpha * dense.get(chunk_id, 0.0) + (1 - alpha) * lexical.get(chunk_id, 0.0)
    return ranked(candidates)
