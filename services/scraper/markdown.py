"""Render a :class:`Thread` as Markdown with YAML front matter.

The indexer reads the front matter (title, uuid, space, url, created, updated), so every value is
written as a JSON string, which is also valid YAML and needs no escaping rules of its own. Each turn
is a ``##`` section: the question, the answer as written, and the numbered list of the sources its
``[n]`` markers point at. The markers stay plain text: the indexer indexes this text as it is, and a
URL inside a sentence would be indexed, embedded and quoted as part of it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from services.scraper.models import Thread, Turn

# Raised whenever the rendering changes: files written in an older format are rendered again on the
# next run, even when neither their listing nor their content moved.
MARKDOWN_FORMAT = 2


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


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape_link_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def render_turn(turn: Turn) -> str:
    parts = [f"## {_one_line(turn.question)}"]
    if "\n" in turn.question.strip():
        parts.append("\n".join(f"> {line}" for line in turn.question.strip().splitlines()))
    parts.append(turn.answer or "_(no answer)_")
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
