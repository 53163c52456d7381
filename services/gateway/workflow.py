"""The question workflow as Celery signatures by name: the gateway imports no service code."""

from __future__ import annotations

from celery import Celery, chain

from shared.contracts import QuestionState
from shared.topology import QUESTION_CHAIN


def start_question(app: Celery, state: QuestionState) -> None:
    """The question chain of ``shared.topology``; each stage passes its result to the next."""
    first, *rest = QUESTION_CHAIN
    signatures = [app.signature(first, args=[state.to_payload()])]
    signatures += [app.signature(name) for name in rest]
    chain(*signatures).apply_async(task_id=f"{state.question_id}:chain")
