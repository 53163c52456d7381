"""Render a :class:`Thread` as Markdown with YAML front matter.

The indexer reads the front matter (title, uuid, space, url, created, updated), so every value is
written as a JSON string, which is also valid YAML and needs no escaping rules of its own. Each turn
is a ``##`` section: the question, the answer as written, the numbered list of the sources its
``[n]`` markers point at, and its images and attachments as links with their captions. The markers
stay plain text: the indexer indexes this text as it is, and a URL inside a sentence would be
indexed, embedded and quoted as part of it.

``#`` is the title and ``##`` a turn's question, nothing else: an answer's own headings (outside its
code) are pushed two levels down, so the last ``##`` heading before any passage is the question of
the turn the passage is in, whatever headings the answer has.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from services.scraper.models import Attachment, Thread, Turn
from services.scraper.prose import close_fences, demote_headings
from shared.thread_address import EXPORTED_THREAD_SOURCE

# Raised whenever the rendering changes: files written in an older format are rendered again on the
# next run, even when neither their listing nor their content moved.
MARKDOWN_FORMAT = 3
TURN_LEVEL = 2


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
        "source": EXPORTED_THREAD_SOURCE,
    }
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items() if value]
    return "---\n" + "\n".join(lines) + "\n---\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape_link_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def _attachment(item: Attachment) -> str:
    caption = _one_line(item.caption) or item.url
    return (
        f"- {item.kind}: [{_escape_link_text(caption)}]({item.url})"
        if item.url
        else f"- {item.kind}: {caption}"
    )


def render_turn(turn: Turn) -> str:
    parts = [f"{'#' * TURN_LEVEL} {_one_line(turn.question)}"]
    if "\n" in turn.question.strip():
        parts.append("\n".join(f"> {line}" for line in turn.question.strip().splitlines()))
    parts.append(close_fences(demote_headings(turn.answer, TURN_LEVEL)) if turn.answer else "_(no answer)_")
    if turn.sources:
        listing = [
            f"{n}. [{_escape_link_text(_one_line(s.name) or s.url)}]({s.url})" if s.url else f"{n}. {s.name}"
            for n, s in enumerate(turn.sources, start=1)
        ]
        parts.append("**Sources**\n\n" + "\n".join(listing))
    if turn.attachments:
        parts.append("**Images and attachments**\n\n" + "\n".join(map(_attachment, turn.attachments)))
    return "\n\n".join(parts)


def render_thread(thread: Thread) -> str:
    body = [f"# {_one_line(thread.title)}", *(render_turn(turn) for turn in thread.turns)]
    return front_matter(thread) + "\n" + "\n\n".join(body) + "\n"
