"""Ways in that need no scraping: Perplexity's own export files (docs/perplexity.md, "Official exports").

* The bulk data request: one JSON with ``conversations[].entries[]`` (``query``, ``answer``); a
  conversation's space is its collection's title, else its ``collection_uuid``.
* Per-thread official Markdown: one ``# <query>`` section per turn; turns are split only where a
  ``---`` line is followed by the next turn's H1 (a rule inside an answer is not a turn);
  ``[^<turn>_<n>]`` footnotes are defined as ``[^<turn>_<n>]: <url>``. Long threads arrive as
  ``Title.md`` and ``Title (1).md`` / ``Title(1).md`` / ``Title-1.md`` parts, joined in order, a
  turn repeated across parts kept once.

Both become :class:`Thread` objects and go through the same writer as scraped threads, so they land
in the same layout, with the same front matter, hashes and checkpoint; a thread already scraped is
not written a second time (see :class:`~services.scraper.writer.ThreadWriter`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from services.scraper.errors import ScraperError
from services.scraper.models import Source, Thread, Turn
from services.scraper.thread_parse import parse_timestamp
from services.scraper.writer import ThreadWriter, tally
from shared.contracts import ExportReport

_NAMESPACE = uuid.UUID("8a3c5f6e-2b1d-4e0f-9a7b-5c4d3e2f1a0b")
_PART = re.compile(r"^(?P<stem>.+?)(?: ?\((?P<paren>\d+)\)|-(?P<dash>\d+))$")
_TURN_SPLIT = re.compile(r"^[ \t]*-{3,}[ \t]*\n(?=(?:[ \t]*\n)*# )", re.MULTILINE)
_FOOTNOTE_DEF = re.compile(r"^\[\^(\d+)_(\d+)\]:\s*(.*)$")
_FOOTNOTE_REF = re.compile(r"\[\^\d+_(\d+)\]")
_DECORATION = (
    re.compile(r"^<img\b[^>]*>\s*$", re.MULTILINE),
    re.compile(r'<span style="display:\s*none">.*?</span>', re.DOTALL),
    re.compile(r'^<div style="text-align:\s*center">\s*⁂\s*</div>\s*$', re.MULTILINE),
)
_MD_LINK = re.compile(r"^\[(?P<name>.*)\]\((?P<url>\S+)\)$")
_URL = re.compile(r"https?://\S+")


class ImportFormatError(ScraperError):
    """The file is not in the documented format."""


def stable_uuid(*parts: str) -> str:
    """A uuid that stays the same for the same input, for threads whose export carries none."""
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


def write_threads(threads: Iterable[Thread], export_dir: Path) -> ExportReport:
    report = ExportReport(export_dir=str(export_dir))
    writer = ThreadWriter(export_dir)
    try:
        for thread in threads:
            report.discovered += 1
            tally(report, *writer.write(thread, imported=True))
    finally:
        writer.close()
    return report


def _source(item: Any) -> Source | None:
    if isinstance(item, str):
        return Source(name=item, url=item)
    if isinstance(item, dict):
        url = str(item.get("url") or item.get("link") or "")
        name = str(item.get("name") or item.get("title") or url)
        return Source(name=name, url=url, snippet=str(item.get("snippet") or "")) if url or name else None
    return None


def _conversation_thread(conversation: dict[str, Any], base_url: str) -> Thread:
    entries = [e for e in conversation.get("entries") or [] if isinstance(e, dict)]
    title = str(conversation.get("context_title") or conversation.get("title") or "").strip()
    title = title or next((str(e.get("query")).strip() for e in entries if e.get("query")), "") or "Untitled"
    created = parse_timestamp(conversation.get("created_at"))
    ident = conversation.get("uuid") or conversation.get("context_uuid") or conversation.get("thread_uuid")
    collection = conversation.get("collection")
    collection = collection if isinstance(collection, dict) else {}
    slug = conversation.get("slug")
    turns = [
        Turn(
            question=str(entry.get("query") or ("Follow-up" if index else title)).strip(),
            answer=str(entry.get("answer") or "").strip(),
            sources=[s for s in map(_source, entry.get("web_results") or entry.get("sources") or []) if s],
        )
        for index, entry in enumerate(entries)
    ]
    last = entries[-1] if entries else {}
    return Thread(
        uuid=str(ident or stable_uuid("perplexity-export", str(conversation.get("created_at")), title)),
        title=title,
        space=str(
            conversation.get("collection_title")
            or collection.get("title")
            or conversation.get("collection_uuid")
            or collection.get("uuid")
            or "General"
        ),
        slug=slug if isinstance(slug, str) else None,
        url=f"{base_url.rstrip('/')}/search/{slug}" if isinstance(slug, str) and slug else None,
        created=created,
        updated=parse_timestamp(last.get("updated_at") or last.get("created_at")) or created,
        model=last.get("display_model") or last.get("model"),
        mode=str(last.get("mode") or conversation.get("mode") or "") or None,
        turns=turns,
    )


def threads_from_data_export(path: Path, base_url: str) -> list[Thread]:
    """Threads of the bulk data-request JSON."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ImportFormatError(f"{path}: not a readable JSON file ({exc})") from exc
    conversations = data.get("conversations") if isinstance(data, dict) else data
    if not isinstance(conversations, list):
        raise ImportFormatError(f"{path}: no `conversations` list; is this Perplexity's data-request JSON?")
    return [_conversation_thread(c, base_url) for c in conversations if isinstance(c, dict)]


def _part_of(key: str, stems: set[str]) -> tuple[str, int]:
    """``Title (1)``, ``Title(1)`` or ``Title-1`` is part 1 of ``Title`` when ``Title.md`` exists."""
    match = _PART.match(key)
    if match and match.group("stem").rstrip() in stems:
        return match.group("stem").rstrip(), int(match.group("paren") or match.group("dash"))
    return key, 0


def group_markdown_parts(directory: Path) -> list[tuple[str, list[Path]]]:
    """``Title.md`` and its numbered parts grouped under ``Title`` (relative), parts in order."""
    files = sorted(p for p in directory.rglob("*.md") if p.is_file())
    stems = {p.with_suffix("").relative_to(directory).as_posix() for p in files}
    groups: dict[str, list[tuple[int, Path]]] = {}
    for path in files:
        key, number = _part_of(path.with_suffix("").relative_to(directory).as_posix(), stems)
        groups.setdefault(key, []).append((number, path))
    return [(key, [p for _, p in sorted(parts)]) for key, parts in sorted(groups.items())]


def _definition_source(value: str) -> Source:
    value = value.strip()
    link = _MD_LINK.match(value)
    if link:
        return Source(name=link.group("name").strip() or link.group("url"), url=link.group("url"))
    url = _URL.search(value)
    if not url:
        return Source(name=value, url="")
    name = (value[: url.start()] + value[url.end() :]).strip(" -–—:") or url.group(0)
    return Source(name=name, url=url.group(0))


def parse_official_turn(section: str) -> Turn | None:
    """One ``# query`` section: the answer with ``[^t_n]`` turned into ``[n]``, and its sources."""
    lines = section.strip().splitlines()
    if not lines:
        return None
    heading = lines[0].strip()
    question = heading[2:].strip() if heading.startswith("# ") else ""
    body = lines[1:] if question else lines
    definitions: dict[int, Source] = {}
    answer_lines = []
    for line in body:
        match = _FOOTNOTE_DEF.match(line.strip())
        if match:
            definitions[int(match.group(2))] = _definition_source(match.group(3))
        else:
            answer_lines.append(line)
    answer = _FOOTNOTE_REF.sub(lambda m: f"[{m.group(1)}]", "\n".join(answer_lines)).strip()
    sources = [
        definitions.get(n) or Source(name=f"source {n}", url="")
        for n in range(1, max(definitions, default=0) + 1)
    ]
    if not question and not answer:
        return None
    return Turn(question=question or "Follow-up", answer=answer, sources=sources)


def _undecorated(text: str) -> str:
    for pattern in _DECORATION:
        text = pattern.sub("", text)
    return text.strip()


def join_parts(texts: list[str]) -> str:
    """The parts as one file: a part that starts with a turn's H1 is a new turn, one that does not
    continues the previous part's answer."""
    joined = ""
    for text in map(_undecorated, texts):
        separator = "\n\n---\n\n" if text.startswith("# ") else "\n\n"
        joined = f"{joined}{separator}{text}" if joined else text
    return joined


def _unique_turns(turns: list[Turn]) -> list[Turn]:
    """Parts may repeat a turn (the last of one part is the first of the next): keep it once."""
    unique: list[Turn] = []
    for turn in turns:
        if turn not in unique:
            unique.append(turn)
    return unique


def thread_from_official_markdown(key: str, parts: list[Path]) -> Thread:
    text = join_parts([p.read_text(encoding="utf-8") for p in parts])
    turns = _unique_turns([t for t in map(parse_official_turn, _TURN_SPLIT.split(text)) if t])
    folder, _, stem = key.rpartition("/")
    return Thread(
        uuid=stable_uuid("perplexity-markdown", key),
        title=stem.strip() or (turns[0].question if turns else "Untitled"),
        space=folder.split("/")[-1] if folder else "General",
        turns=turns,
    )


def threads_from_markdown_dir(directory: Path) -> list[Thread]:
    """Threads of a folder of per-thread official Markdown exports."""
    if not directory.is_dir():
        raise ImportFormatError(f"{directory}: not a folder")
    groups = group_markdown_parts(directory)
    if not groups:
        raise ImportFormatError(f"{directory}: no .md files")
    return [thread_from_official_markdown(key, parts) for key, parts in groups]
