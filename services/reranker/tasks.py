"""Celery edge of the reranker: ``rerank.score`` on the dedicated ``rerank`` queue."""

from __future__ import annotations

import logging
from functools import lru_cache

from services.reranker.cross_encoder import CrossEncoder
from services.reranker.selection import describe, pass_through, select_candidates
from shared.celery_app import app
from shared.contracts import QuestionState
from shared.embedding import ModelMissingError
from shared.events import EventStream
from shared.settings import get_settings
from shared.tasking import question_stage

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def warm_cross_encoder() -> CrossEncoder | None:
    """The process's one session, loaded on first use and kept; ``None`` when no model is provisioned."""
    settings = get_settings()
    try:
        return CrossEncoder(settings.reranker_dir, settings.onnx_threads, settings.rerank_batch_size)
    except ModelMissingError as exc:
        log.warning("%s: reranking passes the fused order through", exc)
        return None


@question_stage
def rerank_question(state: QuestionState) -> QuestionState:
    settings = get_settings()
    encoder = warm_cross_encoder()
    with EventStream(state.question_id).stage("rerank") as stage:
        if encoder is None:
            kept, outcome = pass_through(
                state.candidates, settings.rerank_threshold, settings.rerank_fallback_k
            )
            stage.status = "skipped"
        else:
            logits = encoder.score(state.question, [c.text for c in state.candidates])
            kept, outcome = select_candidates(
                state.candidates,
                logits,
                settings.rerank_threshold,
                settings.rerank_fallback_k,
                encoder.name,
            )
        stage.detail = describe(outcome)
        stage.data = outcome.to_payload()
        log.info(stage.detail)
    state.candidates, state.rerank = kept, outcome
    state.timings_ms["rerank"] = stage.elapsed_ms
    return state


app.task(name="rerank.score")(rerank_question)
