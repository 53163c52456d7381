"""Turn ``GET /rest/thread/<id>`` responses into a :class:`Thread`.

Perplexity serves two answer shapes (docs/perplexity.md, "Thread entries"): schematized ``blocks``
and the older ``text`` field, a JSON string of steps whose ``FINAL`` step holds yet another JSON
string with ``answer`` and ``web_results``. Both are read; blocks win when present.

In blocks, the answer is ``ask_text`` (its ``ask_text_N_markdown`` sections repeat it), else the
``answer`` text item of a ``workflow_root`` block (Deep Research, Computer); the sources are the
``web_results`` block, else the ``sources_answer_mode`` rows (numbered by their ``citation``), else
the workflow's sources. Answers are normalised for Markdown, in prose only (code is kept byte for
byte): ``[label](pplx://...)`` app links become their label, and LaTeX ``\\( \\)`` / ``\\[ \\]``
become ``$ $`` / ``$$ $$``. Images, media items and attachments are kept (:mod:`.media`); a
Computer sub-agent's empty stub entry is not a turn.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from services.scraper.media import entry_attachments, first_str
from services.scraper.models import Source, Thread, ThreadSummary, Turn
from services.scraper.prose import rewrite_prose

JsonObject = dict[str, Any]

_SECTION_USAGE = re.compile(r"^ask_text_(\d+)_markdown$")
_APP_LINK = re.compile(r"\[([^\]\n]*)\]\(pplx://[^)\s]*\)")
_INLINE_MATH = re.compile(r"\\\((.+?)\\\)", re.DOTALL)
_DISPLAY_MATH = re.compile(r"\\\[(.+?)\\\]", re.DOTALL)
# Words of two letters or more and nothing else: no maths symbol, digit or single-letter variable.
_PLAIN_WORDS = re.compile(r"[^\W\d_]{2,}(?:\s+[^\W\d_]{2,})*")
_WORKFLOW_TEXT = "WORKFLOW_ITEM_TEXT"
_WORKFLOW_SOURCES = "WORKFLOW_ITEM_SOURCES"
_NOT_ANSWER_VARIANTS = {"thinking", "reasoning", "status"}
_MIN_ANSWER_CHARS = 30
_MIN_PLAN_CHARS = 80


def parse_timestamp(value: Any) -> datetime | None:
    """ISO strings (zone-less means UTC, nanoseconds tolerated) or epoch microseconds; ``None`` for
    anything else, including numbers no date has (NaN, infinities, 1e20)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1_000_000 if value > 10**11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00")
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _loads(value: Any) -> Any:
    """Decode a JSON string; anything else (or bad JSON) comes back as ``None``."""
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _sources_from(items: Any) -> list[Source]:
    """Web results with the alias keys readers accept (``name|title``, ``url|link``, ``snippet|text``)."""
    sources = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        url = item.get("url") or item.get("link") or ""
        name = item.get("name") or item.get("title") or url
        snippet = item.get("snippet") or item.get("text") or ""
        if url or name:
            sources.append(Source(name=str(name).strip(), url=str(url).strip(), snippet=str(snippet).strip()))
    return sources


def _markdown_answer(blocks: list[JsonObject]) -> str:
    """``ask_text`` alone; the ``ask_text_N_markdown`` sections repeat it, so they are only a fallback."""
    sections: list[tuple[int, str]] = []
    for block in blocks:
        usage = str(block.get("intended_usage", ""))
        answer = (block.get("markdown_block") or {}).get("answer")
        if not isinstance(answer, str):
            continue
        if usage == "ask_text" and answer.strip():
            return answer.strip()
        match = _SECTION_USAGE.match(usage)
        if match:
            sections.append((int(match.group(1)), answer.strip()))
    unique: list[str] = []
    for _, text in sorted(sections):
        if text and text not in unique:
            unique.append(text)
    return "\n\n".join(unique)


def _workflow_items(blocks: list[JsonObject], kind: str) -> list[JsonObject]:
    """The items of type ``kind`` in every ``workflow_root`` block's steps, in order."""
    items = []
    for block in blocks:
        if block.get("intended_usage") != "workflow_root":
            continue
        steps = (block.get("workflow_block") or {}).get("steps") or []
        for step in (s for s in steps if isinstance(s, dict)):
            for item in step.get("items") or []:
                if isinstance(item, dict) and item.get("type") == kind:
                    items.append(item.get("payload") or {})
    return items


def _workflow_answer(blocks: list[JsonObject]) -> str:
    """The workflow's ``answer`` text item (its chunks when ``text`` lags them); else its last text
    item that is not thinking."""
    candidates: list[tuple[bool, str]] = []
    for payload in _workflow_items(blocks, _WORKFLOW_TEXT):
        text_payload = payload.get("text_payload") or {}
        chunks = text_payload.get("chunks")
        text = "".join(map(str, chunks)) if isinstance(chunks, list) and chunks else text_payload.get("text")
        variant = str(text_payload.get("variant") or payload.get("variant") or "")
        if isinstance(text, str) and text.strip() and variant not in _NOT_ANSWER_VARIANTS:
            candidates.append((variant == "answer", text.strip()))
    answers = [text for is_answer, text in candidates if is_answer]
    return answers[-1] if answers else (candidates[-1][1] if candidates else "")


def _sources_by_citation(rows: Any) -> list[Source]:
    """``sources_mode_block.rows``: each ``web_result`` sits at its ``citation`` number (1-based)."""
    numbered: dict[int, Source] = {}
    unnumbered: list[Source] = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        parsed = _sources_from([row.get("web_result") or {}])
        citation = row.get("citation")
        if not parsed:
            continue
        if isinstance(citation, int) and citation >= 1 and citation not in numbered:
            numbered[citation] = parsed[0]
        else:
            unnumbered.append(parsed[0])
    sources = [
        numbered.get(n) or Source(name=f"source {n}", url="") for n in range(1, max(numbered, default=0) + 1)
    ]
    return sources + unnumbered


def _block_sources(blocks: list[JsonObject]) -> list[Source]:
    by_usage = {str(b.get("intended_usage")): b for b in blocks}
    web = (by_usage.get("web_results") or {}).get("web_result_block") or {}
    sources = _sources_from(web.get("web_results"))
    mode = (by_usage.get("sources_answer_mode") or {}).get("sources_mode_block") or {}
    sources = sources or _sources_by_citation(mode.get("rows")) or _sources_from(mode.get("web_results"))
    if not sources:
        for payload in _workflow_items(blocks, _WORKFLOW_SOURCES):
            sources.extend(_sources_from((payload.get("sources_payload") or {}).get("sources")))
    return sources


def _inline_math(match: re.Match[str]) -> str:
    """``\\( x \\)`` as ``$x$``; brackets around plain words (``the escaped \\( and \\) match``) are
    prose about brackets, not math, and stay as written."""
    body = match.group(1).strip()
    return match.group(0) if _PLAIN_WORDS.fullmatch(body) else f"${body}$"


def _normalise_prose(prose: str) -> str:
    prose = _APP_LINK.sub(lambda m: m.group(1), prose)
    prose = _DISPLAY_MATH.sub(lambda m: f"$${m.group(1).strip()}$$", prose)
    return _INLINE_MATH.sub(_inline_math, prose)


def normalise_answer(answer: str) -> str:
    """In prose (never in code), ``[label](pplx://...)`` links become their label and LaTeX
    delimiters become Markdown math."""
    return rewrite_prose(answer, _normalise_prose)


def _holds_text(value: Any, depth: int = 6) -> bool:
    """Whether a block's payload holds any non-blank string (looked at ``depth`` levels deep)."""
    if isinstance(value, str):
        return bool(value.strip())
    if depth and isinstance(value, dict):
        return any(_holds_text(v, depth - 1) for v in value.values())
    if depth and isinstance(value, list):
        return any(_holds_text(v, depth - 1) for v in value)
    return False


def is_stub(entry: JsonObject, turn: Turn) -> bool:
    """An entry that only stands for a Computer sub-agent's run: its ``subagent_result`` blocks hold
    no text, and it has no answer, sources or attachments. It is not a turn of the thread (a
    sub-agent block that does hold text is kept as a turn, even when its answer cannot be read)."""
    subagent = [
        b
        for b in entry.get("blocks") or []
        if isinstance(b, dict) and "subagent" in str(b.get("intended_usage") or "")
    ]
    payloads = [{k: v for k, v in b.items() if k != "intended_usage"} for b in subagent]
    return (
        bool(subagent)
        and not any(map(_holds_text, payloads))
        and not (turn.answer or turn.sources or turn.attachments)
    )


def _steps(entry: JsonObject) -> list[JsonObject]:
    decoded = _loads(entry.get("text"))
    return [step for step in decoded if isinstance(step, dict)] if isinstance(decoded, list) else []


def _final_payload(steps: list[JsonObject]) -> JsonObject | None:
    for step in reversed(steps):
        if step.get("step_type") == "FINAL":
            content = step.get("content") or {}
            payload = _loads(content.get("answer"))
            return payload if isinstance(payload, dict) else None
    return None


def _longest_string(payload: JsonObject) -> str:
    strings = [
        value for value in payload.values() if isinstance(value, str) and len(value) > _MIN_ANSWER_CHARS
    ]
    return max(strings, key=len, default="")


def _text_answer(entry: JsonObject, steps: list[JsonObject]) -> tuple[str, list[Source]]:
    """The answer and sources of the ``text`` flavour, tolerating the simplified variant in which
    ``text`` is the answer itself and ``answer`` a JSON string beside it."""
    payload = _final_payload(steps)
    if payload is not None:
        answer = payload["answer"] if isinstance(payload.get("answer"), str) else _longest_string(payload)
        sources = _sources_from(payload.get("web_results"))
        if not sources:
            for step in steps:
                if step.get("step_type") == "SEARCH_RESULTS":
                    sources = _sources_from((step.get("content") or {}).get("web_results"))
        return answer.strip(), sources
    if not steps and isinstance(entry.get("text"), str) and _loads(entry["text"]) is None:
        side = _loads(entry.get("answer"))
        answer = side.get("answer") if isinstance(side, dict) else entry["text"]
        return str(answer).strip(), _sources_from(entry.get("web_results"))
    return "", []


def _plan_answer(entry: JsonObject) -> str:
    goals = (entry.get("plan") or {}).get("goals") or []
    texts = [g.get("description", "") for g in goals if isinstance(g, dict)]
    longest = max((t for t in texts if isinstance(t, str) and len(t) > _MIN_PLAN_CHARS), key=len, default="")
    return longest.strip()


def _question(entry: JsonObject, steps: list[JsonObject]) -> str:
    query = entry.get("query_str")
    if isinstance(query, str) and query.strip():
        return query.strip()
    for step in steps:
        if step.get("step_type") == "INITIAL_QUERY":
            text = (step.get("content") or {}).get("query")
            if isinstance(text, str) and text.strip():
                return text.strip()
    return ""


def parse_turn(entry: JsonObject) -> Turn:
    steps = _steps(entry)
    blocks = [b for b in entry.get("blocks") or [] if isinstance(b, dict)]
    answer = _markdown_answer(blocks) or _workflow_answer(blocks)
    sources = _block_sources(blocks)
    if not answer or not sources:
        text_answer, text_sources = _text_answer(entry, steps)
        answer = answer or text_answer
        sources = sources or text_sources
    answer = normalise_answer(answer or _plan_answer(entry))
    return Turn(
        question=_question(entry, steps),
        answer=answer,
        sources=sources,
        attachments=entry_attachments(entry, blocks),
    )


def _entry_key(entry: JsonObject) -> str | None:
    for key in ("uuid", "frontend_uuid", "entry_uuid", "backend_uuid"):
        if isinstance(entry.get(key), str) and entry[key]:
            return entry[key]
    return None


def dedupe_entries(entries: list[JsonObject]) -> list[JsonObject]:
    """Cursor pages may repeat entries; keep the first of each uuid, in order."""
    seen: set[str] = set()
    unique = []
    for entry in entries:
        key = _entry_key(entry)
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        unique.append(entry)
    return unique


def _entry_time(entry: JsonObject) -> datetime | None:
    for key in ("entry_created_datetime", "created_us", "created_datetime"):
        parsed = parse_timestamp(entry.get(key))
        if parsed:
            return parsed
    return None


def build_thread(
    entries: list[JsonObject], metadata: JsonObject, summary: ThreadSummary, base_url: str
) -> Thread:
    """Assemble the thread; entries are sorted oldest first when they carry a creation time."""
    entries = dedupe_entries(entries)
    if all(_entry_time(e) for e in entries):
        entries = sorted(entries, key=lambda e: _entry_time(e) or datetime.min.replace(tzinfo=UTC))
    first, last = (entries[0], entries[-1]) if entries else ({}, {})
    title = first_str(metadata.get("title"), first.get("thread_title"), summary.title) or "Untitled"
    turns = [turn for entry in entries if not is_stub(entry, turn := parse_turn(entry))]
    for index, turn in enumerate(turns):
        if not turn.question:
            turn.question = title if index == 0 else "Follow-up"
    slug = first_str(summary.slug, first.get("thread_url_slug"))
    return Thread(
        uuid=summary.uuid,
        title=title,
        space=first_str((first.get("collection_info") or {}).get("title"), summary.space) or "General",
        space_uuid=first_str((first.get("collection_info") or {}).get("uuid"), summary.space_uuid),
        slug=slug,
        url=f"{base_url.rstrip('/')}/search/{slug or summary.uuid}",
        created=parse_timestamp(metadata.get("created_at")) or _entry_time(first),
        updated=parse_timestamp(metadata.get("updated_at"))
        or parse_timestamp(last.get("updated_datetime"))
        or parse_timestamp(summary.last_query_datetime),
        model=first_str(last.get("display_model"), last.get("user_selected_model"), summary.display_model),
        mode=first_str(last.get("search_mode"), last.get("mode"), summary.mode),
        turns=turns,
    )
