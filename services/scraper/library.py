"""What the export folder holds, read back from its files and its checkpoint: the library check.

Each Markdown file is read as the indexer and the evidence view read it (front matter, then ``## ``
turn headings outside code fences) and set against its checkpoint record: how the thread came in
(scraped, imported, both), how many turns the file has against the ``query_count`` the site listed
and whether its last page said ``has_next_page: false``, and files that do not read as a thread.
Files are opened without following links and up to ``max_file_bytes``, like every document read.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from services.scraper.checkpoint import CHECKPOINT_NAME, Checkpoint, ThreadRecord
from services.scraper.writer import IMPORTED, SCRAPED
from shared.contracts import LibraryCheck, ThreadCheck
from shared.markdown_source import fenced_ranges, split_front_matter
from shared.safe_files import RefusedFileError, read_regular_file
from shared.thread_address import EXPORTED_THREAD_SOURCE

TURN_HEADING = "## "


def turn_questions(body: str) -> list[str]:
    """The ``## `` headings of a thread's body that are not inside code fences."""
    fences = fenced_ranges(body)
    questions = []
    position = 0
    for line in body.splitlines(keepends=True):
        if line.startswith(TURN_HEADING) and not any(lo <= position < hi for lo, hi in fences):
            questions.append(line[len(TURN_HEADING) :].strip())
        position += len(line)
    return questions


def front_matter(header: str) -> dict[str, object]:
    """The exporter's front matter: one ``key: <JSON value>`` a line (``ValueError`` otherwise)."""
    fields: dict[str, object] = {}
    for line in header.splitlines():
        key, separator, value = line.partition(": ")
        if not separator:
            raise ValueError(f"front matter line {line[:40]!r} is not `key: value`")
        fields[key.strip()] = json.loads(value)
    return fields


def _origin(record: ThreadRecord | None) -> str:
    if record is None:
        return "unknown"
    origins = set(record.origins) or {IMPORTED if record.imported else SCRAPED}
    return "both" if origins == {IMPORTED, SCRAPED} else origins.pop()


def check_file(path: Path, relpath: str, record: ThreadRecord | None, max_bytes: int) -> ThreadCheck:
    check = ThreadCheck(path=relpath, origin=_origin(record))
    if record is not None:
        check.site_turns, check.site_complete = record.site_turns, record.site_complete
    try:
        text = read_regular_file(path, max_bytes).decode("utf-8")
        header, body_start = split_front_matter(text)
        fields = front_matter(header or "")
    except (OSError, RefusedFileError, UnicodeDecodeError, ValueError) as exc:
        check.problem = f"not read as a thread: {exc}"
        return check
    if header is None or fields.get("source") != EXPORTED_THREAD_SOURCE:
        check.problem = "no Perplexity front matter (`source: perplexity`)"
        return check
    questions = turn_questions(text[body_start:])
    check.title = str(fields.get("title") or "")
    check.turns = len(questions)
    check.first_question = questions[0] if questions else None
    if not questions:
        check.problem = "no `## ` turn in the file"
    return check


def checkpoint_records(export_dir: Path, max_bytes: int) -> dict[str, ThreadRecord]:
    """The checkpoint's records by file path, read without changing anything (none when it is
    missing or unreadable)."""
    try:
        data = read_regular_file(export_dir / CHECKPOINT_NAME, max_bytes)
        records = Checkpoint.model_validate_json(data).threads.values()
    except (OSError, RefusedFileError, ValidationError, ValueError):
        return {}
    return {record.path: record for record in records}


def check_library(export_dir: Path, max_bytes: int) -> LibraryCheck:
    """Every Markdown file of the export folder, checked against its checkpoint record."""
    by_path = checkpoint_records(export_dir, max_bytes)
    report = LibraryCheck(export_dir=str(export_dir))
    for path in sorted(export_dir.rglob("*.md")) if export_dir.is_dir() else []:
        relpath = path.relative_to(export_dir).as_posix()
        report.threads.append(check_file(path, relpath, by_path.get(relpath), max_bytes))
    return report
