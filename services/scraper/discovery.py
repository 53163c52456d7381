"""Find every thread of the library: pinned ones first, then ``list_ask_threads`` page by page.

Paging goes on until a page is empty or brings no uuid not seen before: a server that caps the page
size below the one asked for must not end the listing early, and one that ignores ``offset`` must
not loop. ``total_threads`` is never trusted (it is capped, or counts sub-threads); the count found
is logged against it. Pinned and regular listings overlap, so threads are deduplicated by uuid.
See docs/perplexity.md, "Listing the library".
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

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


@dataclass
class Library:
    """What discovery found: the threads, and what the listing claimed their number was."""

    threads: list[ThreadSummary]
    claimed_total: int | None = None


def _space(collection: Any) -> tuple[str | None, str | None]:
    """The space's title (its slug when untitled) and uuid from a list item's ``collection``."""
    if not isinstance(collection, dict):
        return None, None
    title = next((collection[k] for k in ("title", "slug") if isinstance(collection.get(k), str)), None)
    uuid = collection.get("uuid")
    return ((title.strip() or None) if title else None), (uuid if isinstance(uuid, str) else None)


def to_summary(item: Any, pinned: bool = False) -> ThreadSummary | None:
    """A listing item as a :class:`ThreadSummary`; ``None`` (logged) for an item without a uuid."""
    if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
        log.warning("skipping a listing item without a uuid: %.200r", item)
        return None
    space, space_uuid = _space(item.get("collection"))
    fields = {
        **item,
        "space": space,
        "space_uuid": space_uuid,
        "is_pinned": pinned or item.get("is_pinned") is True,
    }
    try:
        return ThreadSummary.model_validate(fields)
    except ValidationError as exc:
        log.warning("listing item %s: unexpected field types (%s); keeping its uuid", item["uuid"], exc)
        return ThreadSummary(uuid=item["uuid"], space=space, space_uuid=space_uuid, is_pinned=pinned)


def list_body(limit: int, offset: int) -> dict[str, Any]:
    """The body the web app sends (docs/perplexity.md), with ``exclude_asi: false`` so Computer /
    ASI threads are listed too."""
    return {
        "limit": limit,
        "offset": offset,
        "ascending": False,
        "include_assets": True,
        "search_term": "",
        "send_last_entry": True,
        "thread_type_filter": None,
        "with_temporary_threads": False,
        "exclude_asi": False,
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


def _first_page(client: PerplexityClient, page_size: int, pacer: Pacer) -> list[Any]:
    """Offset 0, retried a few times when empty: a page not yet ready answers ``[]``."""
    items = _page(client, page_size, 0)
    for _ in range(EMPTY_FIRST_PAGE_TRIES - 1):
        if items:
            break
        pacer.pause()
        items = _page(client, page_size, 0)
    return items


def _claimed_total(items: list[Any]) -> int | None:
    claims = [i.get("total_threads") for i in items if isinstance(i, dict)]
    return max((c for c in claims if isinstance(c, int) and not isinstance(c, bool)), default=None)


def discover(client: PerplexityClient, page_size: int, pacer: Pacer) -> Library:
    """Every thread of the library, pinned first; raises :class:`DiscoveryFailed` on an empty one."""
    found: dict[str, ThreadSummary] = {s.uuid: s for s in pinned_threads(client)}
    listed: set[str] = set()
    claimed: int | None = None
    offset = 0
    items = _first_page(client, page_size, pacer)
    if not items and not found:
        raise DiscoveryFailed(
            f"list_ask_threads returned no threads after {EMPTY_FIRST_PAGE_TRIES} attempts. "
            "If your library is not empty, the login is probably stale: run `hindsight scrape --login`."
        )
    for page_number in range(1, MAX_PAGES + 1):
        summaries = [s for s in map(to_summary, items) if s]
        new = [s for s in summaries if s.uuid not in listed]
        claimed = _claimed_total(items) or claimed
        if not items or not new:
            break
        for summary in new:
            listed.add(summary.uuid)
            found.setdefault(summary.uuid, summary)
        log.debug("library page %d: %d threads so far", page_number, len(found))
        offset += len(items)
        pacer.pause()
        items = _page(client, page_size, offset)
    if claimed is not None and claimed != len(found):
        log.info(
            "found %d threads; the listing's total_threads says %d (it is capped, or counts "
            "Computer sub-threads, so the count found is what is exported)",
            len(found),
            claimed,
        )
    return Library(threads=list(found.values()), claimed_total=claimed)
