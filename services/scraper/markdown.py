"""Render a :class:`Thread` as Markdown with YAML front matter.

The indexer reads the front matter (title, uuid, space, url, created, updated), so every value is
written as a JSON string, which is also valid YAML and needs no escaping rules of its own. Each turn
is a ``##`` section: the question, the answer with its ``[n]`` markers turned into links, and the
numbered sources those markers point at.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from services.scraper.models import Source, Thread, Turn

_MARKER = re.compile(r"\[(\d{1,3})\](?!\()")


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def front_matter(thread: Thread) -> str:
    fields: dict[str, str | None] = {
        "title": thread.title,
        "uuid": thread.uuid,
        "slug": thread.slug,
        "space": thread.space,
        "url": thread.url,
        "created": _iso(thread.created) if thread.created else None,
        "updated": _iso(thread.updated) if thread.updated else None,
        "model": thread.model,
        "mode": thread.mode,
        "source": "perplexity",
    }
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items() if value]
    return "---\n" + "\n".join(lines) + "\n---\n"


def link_markers(answer: str, sources: list[Source]) -> str:
    """``[2]`` becomes ``[[2]](url)`` when source 2 exists; other brackets stay as written."""

    def replace(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if 1 <= number <= len(sources) and sources[number - 1].url:
            return f"[[{number}]]({sources[number - 1].url})"
        return match.group(0)

    return _MARKER.sub(replace, answer)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape_link_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def render_turn(turn: Turn) -> str:
    parts = [f"## {_one_line(turn.question)}"]
    if "\n" in turn.question.strip():
        parts.append("\n".join(f"> {line}" for line in turn.question.strip().splitlines()))
    parts.append(link_markers(turn.answer, turn.sources) if turn.answer else "_(no answer)_")
    if turn.sources:
        listing = [
            f"{n}. [{_escape_link_text(_one_line(s.name) or s.url)}]({s.url})" if s.url else f"{n}. {s.name}"
            for n, s in enumerate(turn.sources, start=1)
        ]
        parts.append("**Sources**\n\n" + "\n".join(listing))
    return "\n\n".join(parts)


def render_thread(thread: Thread) -> str:
    body = [f"# {_one_line(thread.title)}", *(render_turn(turn) for turn in thread.turns)]
    return front_matter(thread) + "\n" + "\n\n".join(body) + "\n"
