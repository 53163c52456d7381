"""The reranker as a plain object: a warm cross-encoder behind the micro-batcher, or pass-through."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from services.reranker.batcher import MicroBatcher
from services.reranker.cross_encoder import CrossEncoder, calibrated_cuts
from services.reranker.cutoff import describe, pass_through, select_candidates
from services.reranker.health import worker_name
from shared.contracts import Candidate, RerankerStatus, RerankOutcome
from shared.embedding import ModelMissingError
from shared.settings import RerankingSettings

log = logging.getLogger(__name__)


class Reranker:
    """One per worker process: loads the session once and keeps it warm."""

    def __init__(self, settings: RerankingSettings, model_dir: Path, onnx_threads: int) -> None:
        """The cross-encoder in ``model_dir`` (its calibrated cuts unless ``settings`` override them),
        run with ``onnx_threads``; without a model, pass-through with the reason kept."""
        keep, answerable = calibrated_cuts(model_dir)
        self.threshold = settings.rerank_threshold if settings.rerank_threshold is not None else keep
        override = settings.rerank_answerable_logit
        self.answerable_logit = override if override is not None else answerable
        self.fallback_k = settings.rerank_fallback_k
        self.encoder: CrossEncoder | None = None
        self.batcher: MicroBatcher | None = None
        try:
            self.encoder = CrossEncoder(
                model_dir,
                onnx_threads,
                settings.reranker_precision,
            )
        except ModelMissingError as exc:
            self.missing_reason = str(exc)
            log.warning("%s: reranking passes the fused order through", exc)
            return
        self.batcher = MicroBatcher(
            self.encoder.score_pairs,
            settings.rerank_batch_size,
            settings.rerank_max_wait_ms / 1000,
            batches_in_flight=self.encoder.batches_in_flight,
        )

    @property
    def status(self) -> RerankerStatus:
        if self.encoder is None:
            return RerankerStatus(
                worker=worker_name(), mode="pass-through", model=None, detail=self.missing_reason
            )
        return RerankerStatus(worker=worker_name(), mode="scoring", model=self.encoder.name, detail="warm")

    def rerank(self, question: str, candidates: list[Candidate]) -> tuple[list[Candidate], RerankOutcome]:
        """Score every candidate against the question and keep what the threshold (or fallback) allows."""
        started = time.perf_counter()
        if self.batcher is None or self.encoder is None:
            kept, outcome = pass_through(candidates, self.threshold, self.fallback_k)
        else:
            logits = self.batcher.score(question, [c.text for c in candidates])
            kept, outcome = select_candidates(
                candidates, logits, self.threshold, self.fallback_k, self.encoder.name, self.answerable_logit
            )
        log.info("%s (%.0f ms)", describe(outcome), (time.perf_counter() - started) * 1000)
        return kept, outcome
