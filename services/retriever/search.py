"""The retrieval legs for one plan, run concurrently, fused, cut to the reranker's inputs, expanded.

Legs: dense search once per variation (``dense:i``), once for the HyDE passage (``hyde``) when the
HyDE mode wants it, BM25 over chunk text and title (``bm25``), and ripgrep over the files for the
hard keywords (``exact``). Each leg applies the filters itself, so every pool is full of results
the user may see. The exact leg depends on a binary and on files, so its failure is reported and
the other legs still answer; a failing store fails the search.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from services.retriever.exact import ExactSearcher
from services.retriever.expansion import expand_neighbours
from services.retriever.fusion import (
    alpha_blend,
    in_documents,
    legs_agree,
    reciprocal_rank_fusion,
)
from services.retriever.hyde import HydeDecision, decide_hyde, write_hyde_passage
from shared.contracts import Candidate, HydeMode, Plan, SearchFilters, Strategy
from shared.interfaces import LLM, Embedder, Hit, VectorStore
from shared.settings import RetrievalSettings

LegFamily = Literal["dense", "hyde", "bm25", "exact"]
ALL_LEGS: frozenset[LegFamily] = frozenset({"dense", "hyde", "bm25", "exact"})


@dataclass(frozen=True)
class RetrievalConfig:
    """The knobs of one search; :meth:`from_settings` reads them for a plan's strategy from the
    retrieval settings, which hold every default (this class has none of its own but the legs)."""

    pool: int
    keep: int
    exact_pool: int
    rrf_k: int
    weights: Mapping[str, float]
    fusion: Literal["rrf", "alpha"]
    alpha: float
    hyde_mode: HydeMode
    hyde_threshold_score: float
    hyde_threshold_count: int
    k_adjacent: int
    hyde_weak_writers: tuple[str, ...]
    lead_bonus: float
    centroid_weight: float
    guard_top: int
    guard_min_shared: int
    legs: frozenset[LegFamily] = ALL_LEGS

    @classmethod
    def from_settings(
        cls,
        settings: RetrievalSettings,
        strategy: Strategy,
        hyde_mode: HydeMode | None = None,
        k_adjacent: int | None = None,
    ) -> RetrievalConfig:
        return cls(
            pool=settings.pool_size(strategy),
            keep=settings.rerank_inputs(strategy),
            exact_pool=settings.pool_exact,
            rrf_k=settings.rrf_k,
            weights={
                "dense": settings.rrf_weight_dense,
                "hyde": settings.rrf_weight_hyde,
                "bm25": settings.rrf_weight_bm25,
                "exact": settings.rrf_weight_exact,
            },
            fusion=settings.fusion_method,
            alpha=settings.fusion_alpha,
            hyde_mode=hyde_mode or settings.hyde_mode,
            hyde_threshold_score=settings.hyde_threshold_score,
            hyde_threshold_count=settings.hyde_threshold_count,
            k_adjacent=settings.k_adjacent if k_adjacent is None else k_adjacent,
            hyde_weak_writers=tuple(settings.hyde_weak_writers),
            lead_bonus=settings.dense_lead_bonus,
            centroid_weight=settings.dense_centroid_weight,
            guard_top=settings.fusion_guard_top,
            guard_min_shared=settings.fusion_guard_min_shared,
        )


@dataclass
class SearchReport:
    """What the search did, for the stage event and the answer's "how it was found"."""

    legs: dict[str, int] = field(default_factory=dict)
    hyde: HydeDecision = field(default_factory=lambda: HydeDecision(False, "HyDE not considered"))
    fusion: str = ""
    notes: list[str] = field(default_factory=list)

    def describe(self, kept: int) -> str:
        legs = ", ".join(f"{leg} {count}" for leg, count in self.legs.items())
        hyde = f"HyDE {'ran' if self.hyde.run else 'skipped'} ({self.hyde.reason})"
        notes = "".join(f"; {note}" for note in self.notes)
        return f"{kept} candidates by {self.fusion} from {legs}; {hyde}{notes}"


class Retriever:
    """Runs the legs of a plan against one store (and the files behind it)."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        exact: ExactSearcher | None = None,
        llm: LLM | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.exact = exact
        self.llm = llm

    def search(
        self, plan: Plan, config: RetrievalConfig, filters: SearchFilters | None = None
    ) -> tuple[list[Candidate], SearchReport]:
        filters = filters or SearchFilters()
        report = SearchReport()
        legs = self.run_legs(plan, config, filters, report)
        report.legs = {leg: len(hits) for leg, hits in legs.items()}
        if config.fusion == "alpha" and not legs_agree(legs, config.guard_top, config.guard_min_shared):
            report.fusion = (
                f"dense only (α=1): dense and BM25 share fewer than {config.guard_min_shared} of "
                f"their first {config.guard_top} documents"
            )
            fused = alpha_blend(legs, 1.0)
        elif config.fusion == "alpha":
            report.fusion = f"α-blend (α={config.alpha:g})"
            fused = alpha_blend(legs, config.alpha)
        else:
            report.fusion = f"RRF (k={config.rrf_k})"
            fused = reciprocal_rank_fusion(legs, config.rrf_k, config.weights)
        kept = fused[: config.keep]
        return expand_neighbours(kept, self.store, config.k_adjacent), report

    def run_legs(
        self, plan: Plan, config: RetrievalConfig, filters: SearchFilters, report: SearchReport
    ) -> dict[str, list[Hit]]:
        """Every leg on its own thread; the HyDE decision waits only for the first dense leg."""
        workers = len(plan.variations) + 3
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="leg") as pool:
            futures: dict[str, Future[list[Hit]]] = {}
            if "dense" in config.legs:
                for index, variation in enumerate(plan.variations):
                    futures[f"dense:{index}"] = pool.submit(self.dense, variation, config, filters)
            if "bm25" in config.legs:
                futures["bm25"] = pool.submit(
                    self.store.keyword_search, plan.variations[0], config.pool, filters
                )
            if "exact" in config.legs:
                self.submit_exact(pool, futures, plan, config, filters, report)
            if "hyde" in config.legs:
                self.submit_hyde(pool, futures, plan, config, filters, report)
            return {leg: future.result() for leg, future in futures.items()}

    def dense(self, text: str, config: RetrievalConfig, filters: SearchFilters) -> list[Hit]:
        """A dense leg: the store's ``config.pool`` chunks nearest to ``text``, each scored with its
        document (:func:`in_documents`: the lead bonus and the document's centroid)."""
        vector = self.embedder.embed_query(text)
        hits = self.store.dense_search(vector, config.pool, filters)
        centroid_scores: dict[str, float] = {}
        if config.centroid_weight and hits:
            unit = vector / (np.linalg.norm(vector) or 1.0)
            found = self.store.document_centroids([hit.chunk.document_id for hit in hits])
            centroid_scores = {document_id: float(c @ unit) for document_id, c in found.items()}
        return in_documents(hits, config.lead_bonus, config.centroid_weight, centroid_scores)

    def submit_exact(
        self,
        pool: ThreadPoolExecutor,
        futures: dict[str, Future[list[Hit]]],
        plan: Plan,
        config: RetrievalConfig,
        filters: SearchFilters,
        report: SearchReport,
    ) -> None:
        if self.exact is None:
            report.notes.append("exact leg unavailable (no ripgrep)")
        elif not plan.hard_keywords:
            report.notes.append("exact leg skipped (no hard keywords)")
        else:
            futures["exact"] = pool.submit(
                exact_or_note,
                self.exact,
                plan.hard_keywords,
                min(config.pool, config.exact_pool),
                filters,
                report,
            )

    def submit_hyde(
        self,
        pool: ThreadPoolExecutor,
        futures: dict[str, Future[list[Hit]]],
        plan: Plan,
        config: RetrievalConfig,
        filters: SearchFilters,
        report: SearchReport,
    ) -> None:
        dense_hits = None
        if config.hyde_mode is HydeMode.SUPPLEMENT:
            first = futures.get("dense:0") or pool.submit(self.dense, plan.variations[0], config, filters)
            dense_hits = first.result()
        decision = decide_hyde(
            config.hyde_mode,
            dense_hits,
            config.hyde_threshold_score,
            config.hyde_threshold_count,
            writer=self.llm.name if self.llm is not None else None,
            weak_writers=config.hyde_weak_writers,
        )
        passage = self.hyde_passage(plan, decision, report) if decision.run else None
        if decision.run and passage is None:
            decision = HydeDecision(False, decision.reason + "; but no HyDE passage (no LLM)")
        report.hyde = decision
        if passage is not None:
            futures["hyde"] = pool.submit(self.dense, passage, config, filters)

    def hyde_passage(self, plan: Plan, decision: HydeDecision, report: SearchReport) -> str | None:
        """The plan's passage, else one the LLM writes now; ``None`` when neither is possible."""
        if plan.hyde_passage:
            return plan.hyde_passage
        if self.llm is None:
            return None
        try:
            return write_hyde_passage(plan.variations[0], self.llm)
        except Exception as exc:  # any backend failure: search without HyDE
            report.notes.append(f"HyDE passage failed: {type(exc).__name__}: {exc}")
            return None


def exact_or_note(
    searcher: ExactSearcher, keywords: list[str], limit: int, filters: SearchFilters, report: SearchReport
) -> list[Hit]:
    """The exact leg's hits; a failure of ripgrep becomes a note and an empty leg."""
    try:
        return searcher.search(keywords, limit, filters)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
        report.notes.append(f"exact leg failed: {type(exc).__name__}: {exc}")
        return []
