"""Between map and reduce: keep facts loosely relevant to the question, then the best per source."""

from __future__ import annotations

from shared.contracts import Fact

MIN_RELEVANCE = 0.2
LONE_SURVIVOR_KEEP = 4


def relevance_gate(facts: list[Fact], min_relevance: float = MIN_RELEVANCE) -> list[Fact]:
    """Facts at or above ``min_relevance``; all of them if none pass; the top four if only one of
    more than three passes (a single survivor is more often a gate too strict than the truth)."""
    ranked = sorted(facts, key=lambda f: f.relevance, reverse=True)
    passing = [f for f in ranked if f.relevance >= min_relevance]
    if not passing:
        return ranked
    if len(passing) == 1 and len(ranked) > 3:
        return ranked[:LONE_SURVIVOR_KEEP]
    return passing


def best_per_source(facts: list[Fact], document_of: dict[str, str]) -> list[Fact]:
    """One fact per document: the most relevant, in descending relevance."""
    best: dict[str, Fact] = {}
    for fact in facts:
        key = document_of.get(fact.chunk_id, fact.chunk_id)
        if key not in best or fact.relevance > best[key].relevance:
            best[key] = fact
    return sorted(best.values(), key=lambda f: f.relevance, reverse=True)
