"""The question workflow as Celery signatures by name: the gateway imports no service code."""

from __future__ import annotations

from celery import Celery, chain

from shared.contracts import IndexRequest, QuestionState

QUESTION_STAGES = ("retrieve.plan", "retrieve.search", "rerank.score", "synthesize.fan_out")


def start_question(app: Celery, state: QuestionState) -> None:
    """plan -> search -> rerank -> map chord -> reduce; each stage passes the state to the next."""
    first, *rest = QUESTION_STAGES
    signatures = [app.signature(first, args=[state.to_payload()])]
    signatures += [app.signature(name) for name in rest]
    chain(*signatures).apply_async(task_id=f"{state.question_id}:chain")


def start_index(app: Celery, request: IndexRequest) -> None:
    app.signature("index.scan", args=[request.to_payload()]).apply_async()
