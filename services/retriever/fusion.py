"""Reciprocal rank fusion: merge ranked lists from several legs into one candidate list."""

from __future__ import annotations

from shared.contracts import Candidate
from shared.interfaces import Hit


def reciprocal_rank_fusion(legs: dict[str, list[Hit]], k: int = 60) -> list[Candidate]:
    """Score each chunk by ``sum(1 / (k + rank))`` over the legs that found it (ranks from 1).

    Each candidate keeps its rank and raw score per leg, so the answer can say how it was found.
    Ties keep the order in which chunks were first seen, which makes the result deterministic.
    """
    candidates: dict[str, Candidate] = {}
    for leg, hits in legs.items():
        for rank, hit in enumerate(hits, start=1):
            candidate = candidates.get(hit.chunk.id)
            if candidate is None:
                candidate = candidates[hit.chunk.id] = Candidate(chunk=hit.chunk)
            if leg in candidate.ranks:
                continue
            candidate.ranks[leg] = rank
            candidate.scores[leg] = hit.score
            candidate.fused_score += 1.0 / (k + rank)
    return sorted(candidates.values(), key=lambda c: c.fused_score, reverse=True)
