"""A cited passage of a Markdown file as its reader knows it: front matter is never shown as evidence,
and a passage of an exported Perplexity thread names the thread's perplexity.ai address (from the
front matter) and the turn's question (the ``##`` heading the quote sits under).
"""

from __future__ import annotations

import yaml

from services.gateway.schemas import Evidence
from shared.contracts import Citation
from shared.markdown_source import fenced_ranges, split_front_matter
from shared.thread_address import perplexity_address

TURN_HEADING = "## "


def with_source_context(evidence: Evidence, citation: Citation, text: str) -> Evidence:
    """``evidence`` of a Markdown file whose text is ``text``, without front matter in its context,
    plus the turn's question, and the thread's address from the front matter when the citation
    (``Citation.source_url``) did not carry it."""
    header, body_start = split_front_matter(text)
    if evidence.located:
        window_start = text.find(evidence.before + evidence.quote)
        if 0 <= window_start < body_start:
            evidence.before = evidence.before[body_start - window_start :]
    if evidence.thread_url is None:  # an answer stored before citations carried the thread's address
        evidence.thread_url = perplexity_address(front_matter_fields(header).get("url"))
    evidence.turn_question = turn_question(text, citation.char_start, body_start)
    return evidence


def front_matter_fields(header: str | None) -> dict[str, object]:
    if not header:
        return {}
    try:
        parsed = yaml.safe_load(header)
    except yaml.YAMLError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def turn_question(text: str, quote_start: int, body_start: int) -> str | None:
    """The text of the last ``## `` heading outside code fences before ``quote_start`` (the turn a
    thread's quote is in; the exporter pushes an answer's own headings below that level)."""
    fences = fenced_ranges(text)
    end = max(body_start, quote_start)
    while (line_start := text.rfind("\n" + TURN_HEADING, body_start, end)) != -1:
        if not any(lo <= line_start + 1 < hi for lo, hi in fences):
            break
        end = line_start
    if line_start == -1:
        return None
    line_end = text.find("\n", line_start + 1)
    return (
        text[line_start + 1 + len(TURN_HEADING) : line_end if line_end != -1 else len(text)].strip() or None
    )
