"""Find every thread of the library: pinned ones first, then ``list_ask_threads`` page by page.

Paging stops on a short page; ``total_threads`` is never trusted (it is capped or inflated,
SPEC §3.1). Pinned and regular listings overlap, so threads are deduplicated by uuid.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.scraper.client import PerplexityClient
from services.scraper.errors import DiscoveryFailed, RequestFailed
from services.scraper.models import ThreadSummary

log = logging.getLogger(__name__)

LIST_PATH = "/rest/thread/list_ask_threads"
PINNED_PATH = "/rest/thread/list_pinned_ask_threads"
EMPTY_FIRST_PAGE_TRIES = 3
MAX_PAGES = 2000


@dataclass
class Pacer:
    """Sleeps ``delay + uniform(0, jitter)`` seconds between requests, like a person paging."""

    delay_s: float
    jitter_s: float
    sleep: Callable[[float], None]
    rng: random.Random = field(default_factory=random.Random)

    def pause(self) -> None:
        seconds = self.delay_s + self.rng.uniform(0, self.jitter_s)
        if seconds > 0:
            self.sleep(seconds)


def to_summary(item: Any, pinned: bool = False) -> ThreadSummary | None:
    if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
        return None
    collection = item.get("collection") or {}
    space = collection.get("title") if isinstance(collection, dict) else None
    return ThreadSummary.model_validate(
        {**item, "space": space, "is_pinned": pinned or item.get("is_pinned")}
    )


def list_body(limit: int, offset: int) -> dict[str, Any]:
    """The body the web app sends (SPEC §3.1, DaveG7 / later simwai)."""
    return {
        "limit": limit,
        "offset": offset,
        "ascending": False,
        "include_assets": True,
        "search_term": "",
        "send_last_entry": True,
        "thread_type_filter": None,
        "with_temporary_threads": False,
    }


def pinned_threads(client: PerplexityClient) -> list[ThreadSummary]:
    """Pinned threads; a failure here only loses the pinned-first order, so it is logged, not raised."""
    try:
        items = client.post(PINNED_PATH, {}, what="list_pinned_ask_threads")
    except RequestFailed as exc:
        log.warning("pinned threads unavailable: %s", exc)
        return []
    return [s for s in (to_summary(i, pinned=True) for i in items if isinstance(items, list)) if s]


def _page(client: PerplexityClient, limit: int, offset: int) -> list[Any]:
    try:
        items = client.post(LIST_PATH, list_body(limit, offset), what=f"list_ask_threads offset {offset}")
    except RequestFailed as exc:
        raise DiscoveryFailed(f"Could not list the library: {exc}") from exc
    if not isinstance(items, list):
        raise DiscoveryFailed(f"list_ask_threads returned {type(items).__name__}, not a list")
    return items


def discover(client: PerplexityClient, page_size: int, pacer: Pacer) -> list[ThreadSummary]:
    found: dict[str, ThreadSummary] = {s.uuid: s for s in pinned_threads(client)}
    offset = 0
    for page_number in range(MAX_PAGES):
        items = _page(client, page_size, offset)
        tries = 1
        while offset == 0 and not items and tries < EMPTY_FIRST_PAGE_TRIES:
            pacer.pause()
            items, tries = _page(client, page_size, offset), tries + 1
        for summary in filter(None, map(to_summary, items)):
            found.setdefault(summary.uuid, summary)
        if offset == 0 and not items and not found:
            raise DiscoveryFailed(
                f"list_ask_threads returned no threads after {EMPTY_FIRST_PAGE_TRIES} attempts. "
                "If your library is not empty, the login is probably stale: run `hindsight scrape --login`."
            )
        if len(items) < page_size:
            break
        offset += len(items)
        log.debug("library page %d: %d threads so far", page_number + 1, len(found))
        pacer.pause()
    return list(found.values())
