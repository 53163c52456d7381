"""Structured JSON logs, one object a line, each carrying the question (or index job) it belongs to.

A question's id is set once at the edge of a unit of work (a Celery task, an HTTP request) with
:func:`bind_question`; a contextvar carries it to every log record made while that work runs, so
``grep <question id>`` over every service's logs tells the whole story of one question.

Services call :func:`configure_logging` once at start-up. Celery workers get it from
:func:`install_celery_hooks` (called by ``shared.celery_app``), which also binds each task's question id.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

# Only scalar ``extra=`` fields are logged: Celery attaches whole task payloads as ``data``.
SCALARS = (str, int, float, bool, type(None))
question_id_var: ContextVar[str | None] = ContextVar("hindsight_question_id", default=None)

# Attributes every LogRecord has; anything else was passed in ``extra=`` and is logged as a field.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "question_id"}


_PAYLOAD_ID = re.compile(r"'(?:question_id|job_id)': '([^']+)'")


class QuestionIdFilter(logging.Filter):
    """Stamp the current question id on every record, so formatters need not know about contextvars.

    Outside a task (a worker's "Task ... received" line) the id is read from the task arguments
    Celery attaches to the record, so those lines carry it too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        question_id = question_id_var.get()
        celery_data = getattr(record, "data", None)
        if question_id is None and isinstance(celery_data, dict):
            found = _PAYLOAD_ID.search(str(celery_data.get("args", "")))
            question_id = found.group(1) if found else None
        record.question_id = question_id
        return True


class ResultRedactionFilter(logging.Filter):
    """Task results carry document text, quotes and answers: Celery's "succeeded" line keeps the
    task, its id and its run time, never the value it returned."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, dict) and "return_value" in record.args:
            record.args = {**record.args, "return_value": "(result not logged)"}
        return True


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "service", "logger", "question_id", "message", ...extra}`` on one line."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "question_id": getattr(record, "question_id", None) or question_id_var.get(),
            "message": record.getMessage(),
        }
        line.update(
            {k: v for k, v in vars(record).items() if k not in _RECORD_ATTRIBUTES and isinstance(v, SCALARS)}
        )
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_logging(service: str, level: int | str = logging.INFO) -> None:
    """Make the root logger write JSON lines to stderr; idempotent, so calling it twice is harmless."""
    root = logging.getLogger()
    root.setLevel(level)
    for handler in list(root.handlers):
        if getattr(handler, "hindsight_json", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.hindsight_json = True  # type: ignore[attr-defined]
    handler.setFormatter(JsonFormatter(service))
    handler.addFilter(QuestionIdFilter())
    handler.addFilter(ResultRedactionFilter())
    root.addHandler(handler)


@contextmanager
def bind_question(question_id: str | None) -> Iterator[None]:
    """Log every line inside the block with this question id."""
    token = question_id_var.set(question_id)
    try:
        yield
    finally:
        question_id_var.reset(token)


def question_id_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The question (or job) id inside a task's payload, wherever the contracts put it."""
    for value in [*args, *kwargs.values()]:
        if isinstance(value, dict):
            found = value.get("question_id") or value.get("job_id")
            if isinstance(found, str):
                return found
    return None


def install_celery_hooks() -> None:
    """JSON logs in every Celery worker, named after its node, with each task's question id bound.

    A ``setup_logging`` receiver replaces Celery's own logging set-up; the service name is the part
    of the worker's node name before ``@`` (``retriever@host`` logs as ``retriever``).
    """
    from celery.signals import celeryd_init, setup_logging, task_postrun, task_prerun

    node: dict[str, str] = {"service": "worker"}
    tokens: dict[str, Token[str | None]] = {}

    @celeryd_init.connect(weak=False)
    def _remember_node(sender: str | None = None, **_: Any) -> None:
        if sender:
            node["service"] = sender.split("@", 1)[0]

    @setup_logging.connect(weak=False)
    def _json_logs(loglevel: int | str = logging.INFO, **_: Any) -> None:
        configure_logging(node["service"], loglevel or logging.INFO)

    @task_prerun.connect(weak=False)
    def _bind(task_id: str = "", args: Any = (), kwargs: Any = None, **_: Any) -> None:
        tokens[task_id] = question_id_var.set(question_id_of(tuple(args or ()), dict(kwargs or {})))

    @task_postrun.connect(weak=False)
    def _unbind(task_id: str = "", **_: Any) -> None:
        token = tokens.pop(task_id, None)
        if token is not None:
            question_id_var.reset(token)
