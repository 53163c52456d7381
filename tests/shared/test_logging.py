"""JSON log lines carry the question (or index job) id of the work they belong to."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

from shared.logging import JsonFormatter, QuestionIdFilter, bind_question, question_id_of


def log_line(logger: logging.Logger, sink: io.StringIO, message: str, **extra: object) -> dict[str, object]:
    logger.info(message, extra=extra)
    return json.loads(sink.getvalue().splitlines()[-1])


def test_log_lines_are_json_with_the_bound_question_id(tmp_path: Path) -> None:
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(JsonFormatter("retriever"))
    handler.addFilter(QuestionIdFilter())
    logger = logging.getLogger("test.json-lines")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    with bind_question("q-123"):
        inside = log_line(logger, sink, "searching", candidates=8, payload={"text": "private"})
    outside = log_line(logger, sink, "idle")
    assert inside["question_id"] == "q-123" and inside["service"] == "retriever"
    assert inside["candidates"] == 8 and "payload" not in inside
    assert outside["question_id"] is None


def test_question_id_is_found_in_any_task_payload() -> None:
    assert question_id_of(({"question_id": "q1", "question": "?"},), {}) == "q1"
    assert question_id_of(([{"batch_index": 0}], {"question_id": "q2"}), {}) == "q2"
    assert question_id_of(({"job_id": "j1"},), {}) == "j1"
    assert question_id_of(("text",), {}) is None
