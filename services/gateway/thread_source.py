"""A cited passage of a Markdown file as its reader knows it: front matter is never shown as evidence,
and a passage of an exported Perplexity thread names the thread's perplexity.ai address (from the
front matter) and the turn's question (the ``##`` heading the quote sits under).
"""

from __future__ import annotations

import httpx
import yaml

from services.gateway.schemas import Evidence
from shared.contracts import Citation
from shared.markdown_source import fenced_ranges, split_front_matter

TURN_HEADING = "## "
PERPLEXITY_HOST = "perplexity.ai"


def with_source_context(evidence: Evidence, citation: Citation, text: str) -> Evidence:
    """``evidence`` of a Markdown file whose text is ``text``, without front matter in its context,
    plus the thread's address and the turn's question when the file has them."""
    header, body_start = split_front_matter(text)
    if evidence.located:
        window_start = text.find(evidence.before + evidence.quote)
        if 0 <= window_start < body_start:
            evidence.before = evidence.before[body_start - window_start :]
    fields = front_matter_fields(header)
    evidence.thread_url = perplexity_address(fields.get("url"))
    evidence.turn_question = turn_question(text, citation.char_start, body_start)
    return evidence


def perplexity_address(url: object) -> str | None:
    """``url`` if it is a perplexity.ai page (https, the host perplexity.ai or one of its subdomains,
    no credentials, no other port); a file's front matter is data and must not make the page link
    the user to another site under a thread's name."""
    if not isinstance(url, str):
        return None
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return None
    host = parsed.host
    trusted = host == PERPLEXITY_HOST or host.endswith("." + PERPLEXITY_HOST)
    if parsed.scheme != "https" or not trusted or parsed.userinfo or parsed.port not in (None, 443):
        return None
    return str(parsed)


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
