"""Search modes for users who want ranked passages and no synthesis (the retriever's query task).

``semantic`` is dense search on the query; ``exact`` is ripgrep for the query verbatim (and any
identifiers in it); ``hybrid`` is every leg but HyDE, fused; ``auto`` picks exact for a short
identifier-like query and hybrid otherwise, and falls back to hybrid when exact finds nothing.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace

from services.retriever.keywords import IDENTIFIER, QUOTED, pattern_keywords, unique
from services.retriever.planner import rule_based_plan
from services.retriever.search import LegFamily, RetrievalConfig, Retriever, SearchReport
from shared.contracts import Candidate, HydeMode, Plan, SearchMode, SearchRequest, SearchResponse

SHORT_QUERY_WORDS = 3
ERROR_TEXT = re.compile(r"\b\w*(Error|Exception|Warning)\b|Traceback|errno|\bE\d{3,}\b")


def looks_exact(query: str) -> bool:
    """Short and identifier-like: a name, a quoted phrase, a version or an error string."""
    stripped = query.strip()
    if QUOTED.fullmatch(stripped):
        return True
    words = stripped.split()
    if not words or len(words) > SHORT_QUERY_WORDS:
        return False
    return bool(IDENTIFIER.search(stripped) or ERROR_TEXT.search(stripped))


def resolve_mode(query: str, mode: SearchMode) -> SearchMode:
    if mode is not SearchMode.AUTO:
        return mode
    return SearchMode.EXACT if looks_exact(query) else SearchMode.HYBRID


def run_search(
    request: SearchRequest, retriever: Retriever, base: RetrievalConfig, max_keywords: int
) -> SearchResponse:
    """Run ``request`` in its resolved mode; ``base`` supplies fusion and pool settings."""
    started = time.perf_counter()
    resolved = resolve_mode(request.query, request.mode)
    candidates, report = search_in_mode(request, resolved, retriever, base, max_keywords)
    notes = report.notes
    if request.mode is SearchMode.AUTO and resolved is SearchMode.EXACT and not candidates:
        notes = [*notes, "exact found nothing; searched hybrid instead"]
        resolved = SearchMode.HYBRID
        candidates, report = search_in_mode(request, resolved, retriever, base, max_keywords)
        notes += report.notes
    return SearchResponse(
        query=request.query,
        mode=request.mode,
        resolved_mode=resolved,
        candidates=candidates,
        legs=report.legs,
        notes=notes,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
    )


MODE_LEGS: dict[SearchMode, frozenset[LegFamily]] = {
    SearchMode.SEMANTIC: frozenset({"dense"}),
    SearchMode.EXACT: frozenset({"exact"}),
    SearchMode.HYBRID: frozenset({"dense", "bm25", "exact"}),
}


def search_in_mode(
    request: SearchRequest,
    mode: SearchMode,
    retriever: Retriever,
    base: RetrievalConfig,
    max_keywords: int,
) -> tuple[list[Candidate], SearchReport]:
    query = request.query.strip()
    if mode is SearchMode.EXACT:
        keywords = unique([query, *pattern_keywords(query)])[:max_keywords]
        plan = Plan(variations=[query], hard_keywords=keywords)
    elif mode is SearchMode.SEMANTIC:
        plan = Plan(variations=[query])
    else:
        plan = rule_based_plan(query, None, max_keywords)
    config = replace(
        base,
        pool=max(base.pool, request.limit),
        keep=request.limit,
        hyde_mode=HydeMode.OFF,
        k_adjacent=request.k_adjacent,
        legs=MODE_LEGS[mode],
    )
    return retriever.search(plan, config, request.filters)
