"""Celery edge of the reranker: ``rerank.score`` on the dedicated ``rerank`` queue.

Run it with a thread pool so concurrent questions share the micro-batcher:
``celery -A services.reranker.tasks worker -Q rerank --pool threads --concurrency 8``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from celery.signals import worker_ready

from services.reranker.cutoff import describe
from services.reranker.health import start_heartbeat
from services.reranker.service import Reranker
from shared.celery_app import app
from shared.contracts import QuestionState
from shared.events import EventStream, redis_client
from shared.settings import get_settings
from shared.tasking import question_stage
from shared.topology import RERANK_SCORE


@lru_cache(maxsize=1)
def _reranker_of(pid: int) -> Reranker:
    return Reranker(get_settings())


def warm_reranker() -> Reranker:
    """The process's one reranker (one session, one batcher), loaded once and kept.

    Keyed by pid: a prefork child must build its own, since the batcher thread of a reranker
    loaded in the parent does not survive the fork.
    """
    return _reranker_of(os.getpid())


@worker_ready.connect
def _load_and_announce(**_: Any) -> None:
    """Load the model before the first task and keep announcing the mode for /healthz."""
    start_heartbeat(redis_client(), warm_reranker().status, get_settings().reranker_heartbeat_s)


@question_stage
def rerank_question(state: QuestionState) -> QuestionState:
    reranker = warm_reranker()
    with EventStream(state.question_id).stage("rerank") as stage:
        kept, outcome = reranker.rerank(state.question, state.candidates)
        if outcome.model is None:
            stage.status = "skipped"
        stage.detail = describe(outcome)
        stage.data = outcome.to_payload()
    state.candidates, state.rerank = kept, outcome
    state.timings_ms["rerank"] = stage.elapsed_ms
    return state


app.task(name=RERANK_SCORE)(rerank_question)
