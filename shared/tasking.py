"""The Celery edges' common parts: sending a task by its topology name, skipping a cancelled question's
tasks, ending a question's stream when its task fails, and registering a question stage.

A question stage is a plain function ``(stage input, report) -> next stage's input``; ``question_task``
makes it a Celery task that validates the payload as the function's input type, runs it inside the
question's event stage, records its time, and returns the next payload. The function never sees JSON.
Tasks of a question that are not a chain stage (the synthesizer's map chord) use
:func:`skip_if_cancelled` and :func:`failing_question` the same way.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, get_type_hints

from celery import Task
from celery.exceptions import Ignore

from shared.celery_app import app
from shared.contracts import IndexRequest, Question
from shared.events import EventStream, StageReport, fail_question, redis_client
from shared.redis_keys import cancelled_key
from shared.stage_events import QUESTION_STAGES, Stage
from shared.topology import INDEX_SCAN

In = TypeVar("In", bound=Question)
Out = TypeVar("Out", bound=Question)
StageFunction = Callable[[In, StageReport], Out]


def enqueue_index(request: IndexRequest) -> None:
    """Queue an index scan of the request's folder (the gateway, the watcher, a finished scrape)."""
    app.signature(INDEX_SCAN, args=[request.to_payload()]).apply_async()


def is_cancelled(question_id: str) -> bool:
    """Whether the question's asker cancelled it (``DELETE /v1/questions/{id}``)."""
    return bool(redis_client().exists(cancelled_key(question_id)))


def skip_if_cancelled(question_id: str) -> None:
    """Raise Celery's ``Ignore`` for a cancelled question: this task does not run, and what it would
    have started (the rest of the chain, a chord's reduce) does not either."""
    if is_cancelled(question_id):
        raise Ignore()


@contextmanager
def failing_question(question_id: str, what: str) -> Iterator[None]:
    """A failure inside ends the question's stream (``<what> failed: <error>``), so no reader waits for
    an answer that cannot come, and is raised again. Celery's ``Ignore`` (a task replaced or
    skipped) is no failure."""
    try:
        yield
    except Ignore:
        raise
    except Exception as exc:
        fail_question(question_id, f"{what} failed: {type(exc).__name__}: {exc}")
        raise


def input_type(stage: Callable[..., Any]) -> type[Question]:
    """The contract a stage takes: the annotation of its first parameter."""
    first = next(iter(inspect.signature(stage).parameters))
    taken = get_type_hints(stage)[first]
    if not (isinstance(taken, type) and issubclass(taken, Question)):
        raise TypeError(f"{stage.__qualname__} must take a Question contract first, not {taken!r}")
    return taken


def question_task(name: str, event: Stage | None = None) -> Callable[[StageFunction[In, Out]], Task]:
    """Register ``stage`` as the Celery task ``name``, reported as the ``event`` stage of the question:
    by default the one :data:`QUESTION_STAGES` names for the task.

    A failure ends the question's stream, so no reader waits for an answer the broken chain can no
    longer produce; a cancelled question's stage does not run, and the chain stops there.
    """
    event = event or QUESTION_STAGES[name]

    def register(stage: StageFunction[In, Out]) -> Task:
        takes = input_type(stage)

        @functools.wraps(stage)
        def run(payload: dict[str, Any]) -> dict[str, Any]:
            question = takes.model_validate(payload)
            skip_if_cancelled(question.question_id)
            with (
                failing_question(question.question_id, event),
                EventStream(question.question_id).stage(event) as report,
            ):
                result = stage(question, report)  # type: ignore[arg-type]
            result.timings_ms[event] = report.elapsed_ms
            return result.to_payload()

        return app.task(name=name)(run)  # type: ignore[no-any-return]

    return register
