"""The key file and the JSON log lines, as plain code (no processes needed)."""

from __future__ import annotations

import io
import json
import logging
import stat
from pathlib import Path

from services.gateway.keys import KeyFile
from shared.logging import JsonFormatter, QuestionIdFilter, bind_question, question_id_of


def test_key_file_is_owner_only_and_checks_keys_by_hash(tmp_path: Path) -> None:
    keys = KeyFile(tmp_path / "keys.json")
    record, key = keys.create("laptop")
    assert stat.S_IMODE((tmp_path / "keys.json").stat().st_mode) == 0o600
    assert keys.check(key).record == record
    assert keys.check(key + "x").reason == "unknown API key"
    assert keys.check("not-a-key").reason == "unknown API key"
    keys.revoke(record.id)
    assert keys.check(key).reason == f"API key {record.id} was revoked"


def test_revocation_by_another_process_is_seen_without_restart(tmp_path: Path) -> None:
    gateway_view = KeyFile(tmp_path / "keys.json")
    record, key = KeyFile(tmp_path / "keys.json").create("ci")
    assert gateway_view.check(key).record is not None
    KeyFile(tmp_path / "keys.json").revoke(record.id)
    assert gateway_view.check(key).record is None


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
