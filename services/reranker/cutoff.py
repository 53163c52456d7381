"""Which candidates survive reranking: logits at or above the threshold, else the fused top-k."""

from __future__ import annotations

import numpy as np

from shared.contracts import Candidate, RerankOutcome


def select_candidates(
    candidates: list[Candidate],
    logits: np.ndarray,
    threshold: float,
    fallback_k: int,
    model: str,
    answerable_logit: float | None = None,
) -> tuple[list[Candidate], RerankOutcome]:
    """Candidates with ``logit >= threshold`` by descending logit; if none pass, the first
    ``fallback_k`` in fused order (their logits still recorded). With ``answerable_logit``, the
    outcome says whether the best logit reaches it (whether any passage answers the question)."""
    scored = [
        candidate.model_copy(update={"rerank_score": float(logit)})
        for candidate, logit in zip(candidates, logits, strict=True)
    ]
    order = sorted(
        (i for i, logit in enumerate(logits) if logit >= threshold), key=lambda i: -float(logits[i])
    )
    passing = [scored[i] for i in order]
    used_fallback = not passing and bool(scored)
    kept = scored[:fallback_k] if used_fallback else passing
    outcome = outcome_of(len(candidates), kept, threshold, fallback_k, used_fallback, model)
    if len(logits):
        top = float(np.max(logits))
        answerable = None if answerable_logit is None else top >= answerable_logit
        outcome = outcome.model_copy(update={"top_score": top, "answerable": answerable})
    return kept, outcome


def outcome_of(
    received: int,
    kept: list[Candidate],
    threshold: float,
    fallback_k: int,
    used_fallback: bool,
    model: str | None,
) -> RerankOutcome:
    return RerankOutcome(
        received=received,
        kept=len(kept),
        threshold=threshold,
        fallback_k=fallback_k,
        used_fallback=used_fallback,
        model=model,
    )


def describe(outcome: RerankOutcome) -> str:
    """The line the worker logs and emits, e.g. ``Reranked 35 -> 12 (threshold -5.0, fallback to top-20)``."""
    if outcome.model is None:
        return f"Reranker has no model: passing {outcome.kept} candidates through in fused order"
    line = (
        f"Reranked {outcome.received} -> {outcome.kept} "
        f"(threshold {outcome.threshold}, fallback to top-{outcome.fallback_k})"
    )
    if outcome.answerable is False:
        line += f" - no passage answers (best {outcome.top_score:.2f})"
    return line + (" - fallback used" if outcome.used_fallback else "")


def pass_through(
    candidates: list[Candidate], threshold: float, fallback_k: int
) -> tuple[list[Candidate], RerankOutcome]:
    """No model: every candidate, in fused order, said as such (``model`` is ``None``)."""
    return candidates, outcome_of(len(candidates), candidates, threshold, fallback_k, False, None)
