"""Celery edge of the reranker: the rerank stage of a question, on the dedicated rerank queue.

The worker runs a thread pool (``shared.topology``) so concurrent questions share the micro-batcher.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from celery.signals import worker_ready

from services.reranker.health import start_heartbeat
from services.reranker.service import Reranker
from services.reranker.stages import rerank
from shared.celery_app import app  # noqa: F401 - ``celery -A services.reranker.tasks`` finds the app here
from shared.contracts import RerankedQuestion, SearchedQuestion
from shared.events import StageReport, redis_client
from shared.settings import get_settings
from shared.tasking import question_task
from shared.topology import RERANK_SCORE


@lru_cache(maxsize=1)
def _reranker_of(pid: int) -> Reranker:
    settings = get_settings()
    return Reranker(settings.reranking, settings.reranker_dir, settings.embedding.onnx_threads)


def warm_reranker() -> Reranker:
    """The process's one reranker (one session, one batcher), loaded once and kept.

    Keyed by pid: a prefork child must build its own, since the batcher thread of a reranker
    loaded in the parent does not survive the fork.
    """
    return _reranker_of(os.getpid())


@worker_ready.connect
def _load_and_announce(**_: Any) -> None:
    """Load the model before the first task and keep announcing the mode for /healthz."""
    start_heartbeat(redis_client(), warm_reranker().status, get_settings().tasks.reranker_heartbeat_s)


@question_task(RERANK_SCORE)
def rerank_question(searched: SearchedQuestion, report: StageReport) -> RerankedQuestion:
    return rerank(searched, warm_reranker(), report)
