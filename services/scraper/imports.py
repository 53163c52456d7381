"""Ways in that need no scraping: Perplexity's own export files (docs/perplexity.md, "Official exports").

* The bulk data request: one JSON with ``conversations[].entries[]`` (``query``, ``answer``). A
  conversation's space is its collection's title; when the export gives only the collection's uuid,
  the title a scrape saw for that uuid, else ``Space <uuid prefix>``.
* Per-thread official Markdown (:mod:`services.scraper.official_markdown`).

Files are opened like the indexer opens documents (:mod:`shared.safe_files`): a symlink is refused,
not followed, and a file over the cap is not read (``max_file_bytes`` for each Markdown file; the
one data-request JSON holds the whole library, so the command allows it
:data:`DATA_EXPORT_MAX_BYTES`). A bad file or a bad value never stops
an import: it is reported by name (the file, or the thread's title) and the rest is imported.

Both become :class:`Thread` objects and go through the same writer as scraped threads, so they land
in the same layout, with the same front matter, hashes and checkpoint; a thread already there is
not written a second time (see :class:`~services.scraper.writer.ThreadWriter`).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from services.scraper.checkpoint import stable_uuid
from services.scraper.errors import ImportFormatError, ScraperError
from services.scraper.json_items import TooDeep, list_items
from services.scraper.media import entry_attachments
from services.scraper.models import Source, Thread, Turn
from services.scraper.official_markdown import (
    chain_parts,
    group_by_title,
    parse_official_markdown,
)
from services.scraper.thread_parse import normalise_answer, parse_timestamp
from services.scraper.writer import ThreadWriter, tally
from shared.contracts import ExportReport
from shared.safe_files import RefusedFileError, read_regular_file

DATA_EXPORT_MAX_BYTES = 1 << 30


class BadValue(ScraperError):
    """A value of an export that is not what its field holds (a date that is no date, a nested
    structure where text belongs)."""


class Imported(BaseModel):
    """What an export file or folder held: its threads, and what could not be read, by name."""

    threads: list[Thread] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="values, threads or files left out")
    left_out: int = Field(default=0, description="threads or files not imported at all")


def write_threads(imported: Imported, export_dir: Path) -> ExportReport:
    report = ExportReport(export_dir=str(export_dir))
    report.failures += imported.problems
    report.failed += imported.left_out
    writer = ThreadWriter(export_dir)
    try:
        for thread in imported.threads:
            report.discovered += 1
            tally(report, *writer.write(thread, imported=True), title=thread.title)
    finally:
        writer.close()
    return report


def _text(value: Any, field: str) -> str:
    """Text of a field that holds text (a finite number is written as text, nothing as "")."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    raise BadValue(f"`{field}` is not text ({type(value).__name__})")


def _date(value: Any, field: str, problems: list[str]) -> Any:
    parsed = parse_timestamp(value)
    if value is not None and parsed is None:
        problems.append(f"`{field}` {str(value)[:40]!r} is not a date; imported without it")
    return parsed


def _source(item: Any) -> Source | None:
    if isinstance(item, str):
        return Source(name=item, url=item)
    if isinstance(item, dict):
        url = _text(item.get("url") or item.get("link"), "url")
        name = _text(item.get("name") or item.get("title"), "name") or url
        return (
            Source(name=name, url=url, snippet=_text(item.get("snippet"), "snippet")) if url or name else None
        )
    return None


def _turn(entry: dict[str, Any], index: int, title: str) -> Turn:
    sources = entry.get("web_results") or entry.get("sources") or []
    return Turn(
        question=_text(entry.get("query"), "query") or ("Follow-up" if index else title),
        answer=normalise_answer(_text(entry.get("answer"), "answer")),
        sources=[s for s in map(_source, sources if isinstance(sources, list) else []) if s],
        attachments=entry_attachments(entry, []),
    )


def _space(conversation: dict[str, Any]) -> tuple[str, str | None]:
    """The space's title ("" when only its uuid is known) and uuid."""
    collection = conversation.get("collection")
    collection = collection if isinstance(collection, dict) else {}
    title = _text(conversation.get("collection_title") or collection.get("title"), "collection title")
    space_uuid = _text(conversation.get("collection_uuid") or collection.get("uuid"), "collection_uuid")
    return (title or ("" if space_uuid else "General")), space_uuid or None


def _conversation_thread(conversation: dict[str, Any], base_url: str, problems: list[str]) -> Thread:
    entries = [e for e in conversation.get("entries") or [] if isinstance(e, dict)]
    title = _text(conversation.get("context_title") or conversation.get("title"), "context_title")
    title = (
        title or next((_text(e.get("query"), "query") for e in entries if e.get("query")), "") or "Untitled"
    )
    turns = [_turn(entry, index, title) for index, entry in enumerate(entries)]
    created = _date(conversation.get("created_at"), "created_at", problems)
    last = entries[-1] if entries else {}
    updated = _date(last.get("updated_at") or last.get("created_at"), "entries[-1].created_at", problems)
    ident = conversation.get("uuid") or conversation.get("context_uuid") or conversation.get("thread_uuid")
    slug = conversation.get("slug")
    space, space_uuid = _space(conversation)
    first = turns[0] if turns else Turn(question=title, answer="")
    return Thread(
        uuid=_text(ident, "uuid")
        or stable_uuid(
            "perplexity-export", str(conversation.get("created_at")), title, first.question, first.answer
        ),
        title=title,
        space=space,
        space_uuid=space_uuid,
        slug=slug if isinstance(slug, str) else None,
        url=f"{base_url.rstrip('/')}/search/{slug}" if isinstance(slug, str) and slug else None,
        created=created,
        updated=updated or created,
        model=_text(last.get("display_model") or last.get("model"), "model") or None,
        mode=_text(last.get("mode") or conversation.get("mode"), "mode") or None,
        turns=turns,
    )


_TITLE_IN_HEAD = re.compile(r'"context_title"\s*:\s*("(?:[^"\\]|\\.)*")')


def _title_in(head: str) -> str | None:
    """The ``context_title`` written near the start of an item that could not be read whole."""
    match = _TITLE_IN_HEAD.search(head)
    try:
        title = json.loads(match.group(1)) if match else None
    except ValueError:
        return None
    return title if isinstance(title, str) else None


def _conversation_name(conversation: Any, number: int) -> str:
    title = conversation.get("context_title") if isinstance(conversation, dict) else None
    return (
        f"conversation {number} ({title[:60]!r})"
        if isinstance(title, str) and title
        else f"conversation {number}"
    )


def threads_from_data_export(path: Path, base_url: str, max_bytes: int) -> Imported:
    """Threads of the bulk data-request JSON; a conversation that cannot be read is reported by its
    number and title, the others imported."""
    try:
        data = read_regular_file(path, max_bytes)
    except (OSError, RefusedFileError) as exc:
        raise ImportFormatError(f"{path}: not read ({exc})") from exc
    imported = Imported()
    try:
        items = list_items(data, "conversations")
    except (UnicodeDecodeError, ValueError) as exc:
        raise ImportFormatError(f"{path}: not a readable JSON file ({exc})") from exc
    if items is None:
        raise ImportFormatError(f"{path}: no `conversations` list; is this Perplexity's data-request JSON?")
    for number, item in enumerate(items, start=1):
        if isinstance(item, TooDeep):
            name = _conversation_name({"context_title": _title_in(item.head)}, number)
            imported.problems.append(f"{path.name}: {name}: {item}; left out")
            imported.left_out += 1
            continue
        if not isinstance(item, dict):
            continue
        name = _conversation_name(item, number)
        problems: list[str] = []
        try:
            imported.threads.append(_conversation_thread(item, base_url, problems))
        except (BadValue, RecursionError) as exc:
            problems.append(f"{exc if isinstance(exc, BadValue) else 'nested too deep'}; left out")
            imported.left_out += 1
        imported.problems += [f"{path.name}: {name}: {problem}" for problem in problems]
    return imported


def _read_text(path: Path, max_bytes: int) -> str:
    try:
        return read_regular_file(path, max_bytes).decode("utf-8")
    except (OSError, RefusedFileError) as exc:
        raise ImportFormatError(f"{path}: not read ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def threads_from_markdown_dir(directory: Path, max_bytes: int) -> Imported:
    """Threads of a folder of per-thread official Markdown exports; files that cannot be read
    (symlinks, files over ``max_bytes``, not UTF-8) are reported by name."""
    if not directory.is_dir():
        raise ImportFormatError(f"{directory}: not a folder")
    files = sorted(p for p in directory.rglob("*.md") if p.is_file() or p.is_symlink())
    if not files:
        raise ImportFormatError(f"{directory}: no .md files")
    imported = Imported()
    for key, parts in group_by_title(files, directory):
        texts = []
        for path in parts:
            try:
                texts.append((path, _read_text(path, max_bytes)))
            except ImportFormatError as exc:
                imported.problems.append(f"{exc}; left out")
                imported.left_out += 1
        folder, _, title = key.rpartition("/")
        for first, text in chain_parts(texts):
            turns = parse_official_markdown(text)
            ident = key if first == parts[0] else first.relative_to(directory).as_posix()
            imported.threads.append(
                Thread(
                    uuid=stable_uuid("perplexity-markdown", ident),
                    title=title.strip() or (turns[0].question if turns else "Untitled"),
                    space=folder.split("/")[-1] if folder else "General",
                    turns=turns,
                )
            )
    return imported
