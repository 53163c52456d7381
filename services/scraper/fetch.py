"""Fetch one thread's entries, following ``next_cursor`` until the last page."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from services.scraper.client import PerplexityClient
from services.scraper.errors import RequestFailed

MAX_PAGES = 50
PAGE_LIMIT = 100
# The block use cases the web app asks for when it opens a thread: the server drops every block whose
# use case is not asked for (without ``workflow_widgets`` a Deep Research or Computer turn loses its
# ``workflow_root`` block, and with it the answer).
BLOCK_USE_CASES = (
    "answer_modes",
    "media_items",
    "inline_entity_cards",
    "place_widgets",
    "finance_widgets",
    "sports_widgets",
    "news_widgets",
    "shopping_widgets",
    "jobs_widgets",
    "search_result_widgets",
    "inline_images",
    "inline_assets",
    "placeholder_cards",
    "diff_blocks",
    "inline_knowledge_cards",
    "entity_group_v2",
    "refinement_filters",
    "canvas_mode",
    "maps_preview",
    "answer_tabs",
    "price_comparison_widgets",
    "preserve_latex",
    "generic_onboarding_widgets",
    "in_context_suggestions",
    "pending_followups",
    "inline_claims",
    "unified_assets",
    "workflow_steps",
    "workflow_widgets",
    "navigation_results",
    "background_agents",
    "markdown",
)


@dataclass
class RawThread:
    entries: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The last page said ``has_next_page: false`` (not cut by the page cap or a repeated cursor).
    complete: bool = False


def thread_params(cursor: str | None) -> list[tuple[str, str]]:
    """The schematized flavour, oldest first, as the web app asks for it; later pages replace
    ``offset`` with the cursor (docs/perplexity.md, "Reading a thread")."""
    params = [
        ("with_parent_info", "true"),
        ("with_schematized_response", "true"),
        ("limit", str(PAGE_LIMIT)),
        ("from_first", "true"),
    ]
    params.append(("cursor", cursor) if cursor else ("offset", "0"))
    params.extend(("supported_block_use_cases", case) for case in BLOCK_USE_CASES)
    return params


def _split(payload: Any) -> tuple[list[dict[str, Any]], dict[str, Any], bool, str | None]:
    """Entries, metadata, has_next_page, next_cursor from any of the accepted response shapes."""
    if isinstance(payload, list):
        return [e for e in payload if isinstance(e, dict)], {}, False, None
    if not isinstance(payload, dict):
        raise RequestFailed(f"thread response is {type(payload).__name__}, not an object")
    if "entries" not in payload and ("query_str" in payload or "blocks" in payload):
        return [payload], {}, False, None
    entries = [e for e in payload.get("entries") or [] if isinstance(e, dict)]
    cursor = payload.get("next_cursor")
    return entries, payload.get("thread_metadata") or {}, payload.get("has_next_page") is True, cursor


def fetch_thread(client: PerplexityClient, ident: str) -> RawThread:
    raw = RawThread()
    cursor: str | None = None
    seen_cursors: set[str] = set()
    for _ in range(MAX_PAGES):
        payload = client.get(
            f"/rest/thread/{quote(ident, safe='')}", thread_params(cursor), what=f"thread {ident}"
        )
        entries, metadata, has_next, cursor = _split(payload)
        raw.entries.extend(entries)
        raw.metadata = raw.metadata or metadata
        if not has_next:
            raw.complete = True
            break
        if not isinstance(cursor, str) or not cursor or cursor in seen_cursors:
            break
        seen_cursors.add(cursor)
    return raw
