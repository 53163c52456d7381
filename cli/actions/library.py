"""``hindsight library check``: is the Perplexity library whole, and does search find each thread?

The first part reads the export folder (no service needed): threads by origin, turns against what
the site reported, files that do not read as a thread. The second is a known-item test on the
user's own history: each thread's first question is searched through the gateway, and the thread
counts as found when its file is among the first :data:`TOP_SOURCES` distinct sources; Recall@5 and
MRR are printed with the threads search finds worst.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx
from pydantic import BaseModel

from cli.client import GatewayError, default_client, transport_failure
from cli.console import console, error_console, shown
from services.scraper import check_library
from shared.contracts import LibraryCheck, SearchFilters, SearchRequest, SearchResponse
from shared.settings import Settings

TOP_SOURCES = 5
WORST_SHOWN = 10
SEARCH_LIMIT = 50
RATE_LIMIT_WAITS = 5
PROGRESS_EVERY = 25

Search = Callable[[str], SearchResponse]


class KnownItem(BaseModel):
    path: str
    question: str
    rank: int | None = None  # among distinct sources, 1-based; None when not returned at all


def source_rank(file: Path, result: SearchResponse) -> int | None:
    """The 1-based rank of ``file`` among the distinct sources of ``result``."""
    sources: list[str] = []
    for candidate in result.candidates:
        if candidate.chunk.source_uri not in sources:
            sources.append(candidate.chunk.source_uri)
    target = file.resolve()
    return next((n for n, uri in enumerate(sources, start=1) if Path(uri).resolve() == target), None)


def known_items(check: LibraryCheck, search: Search) -> list[KnownItem]:
    """Each readable thread's first question asked, and where its own file ranks; progress is said
    every :data:`PROGRESS_EVERY` questions (a large library waits on the key's rate limit)."""
    root = Path(check.export_dir)
    asked = [(t.path, q) for t in check.threads if t.problem is None and (q := t.first_question)]
    items = []
    for number, (path, question) in enumerate(asked, start=1):
        if number % PROGRESS_EVERY == 0:
            error_console.print(f"[dim]asked {number}/{len(asked)} first questions[/dim]")
        rank = source_rank(root / path, search(question))
        items.append(KnownItem(path=path, question=question, rank=rank))
    return items


def recall_and_mrr(items: list[KnownItem]) -> tuple[float, float]:
    """Recall@5 (found among the first five sources) and mean reciprocal rank over ``items``."""
    if not items:
        return 0.0, 0.0
    found = sum(1 for item in items if item.rank is not None and item.rank <= TOP_SOURCES)
    reciprocal = sum(1 / item.rank for item in items if item.rank is not None)
    return found / len(items), reciprocal / len(items)


def print_check(check: LibraryCheck) -> None:
    readable = len(check.threads) - len(check.unreadable)
    origins = ", ".join(f"{count} {origin}" for origin, count in sorted(check.by_origin.items())) or "none"
    console.print(f"[bold]{readable}[/] threads in {shown(check.export_dir)}: {origins}", soft_wrap=True)
    mismatches = check.turn_mismatches
    console.print(
        f"turns as the site reported them: {readable - len(mismatches)} of {readable}", soft_wrap=True
    )
    for thread in mismatches:
        pages = ", the site had more pages" if thread.site_complete is False else ""
        listed = f"{thread.turns} turns, the site listed {thread.site_turns}{pages}"
        console.print(f"  [yellow]![/] {shown(thread.path)}: {listed}", soft_wrap=True)
    console.print(f"files that did not read as a thread: {len(check.unreadable)}", soft_wrap=True)
    for thread in check.unreadable:
        console.print(f"  [red]![/] {shown(thread.path)}: {shown(thread.problem)}", soft_wrap=True)


def print_known_items(items: list[KnownItem]) -> None:
    if not items:
        console.print("known-item search: no thread to ask (scrape or import your library first)")
        return
    recall, mrr = recall_and_mrr(items)
    console.print(
        f"known-item search (each thread's first question): Recall@{TOP_SOURCES} {recall:.2f}, "
        f"MRR {mrr:.2f} over {len(items)} threads",
        soft_wrap=True,
    )
    worst = sorted((i for i in items if i.rank is None or i.rank > 1), key=lambda i: -(i.rank or 10**6))
    for item in worst[:WORST_SHOWN]:
        where = f"source #{item.rank}" if item.rank else f"not in the first {SEARCH_LIMIT} passages"
        console.print(f"  {where}: {shown(item.path)} — asked {shown(repr(item.question))}", soft_wrap=True)


def gateway_search(export_root: Path, sleep: Callable[[float], None] = time.sleep) -> Search:
    """Search the export folder's passages through the gateway, as ``hindsight search`` does; a
    library larger than the key's rate limit waits as the gateway says (``Retry-After``) and goes on."""
    client = default_client()
    filters = SearchFilters(path_prefix=str(export_root.resolve()))
    request = partial(SearchRequest, limit=SEARCH_LIMIT, filters=filters)

    def search(question: str) -> SearchResponse:
        for _ in range(RATE_LIMIT_WAITS):
            try:
                return client.search(request(query=question[:2000]), 60)
            except GatewayError as exc:
                if exc.status_code != 429:
                    raise
                wait = exc.retry_after or ""
                sleep(float(wait) if wait.isdigit() else 1.0)
        return client.search(request(query=question[:2000]), 60)

    return search


def library_check(settings: Settings, search: Search | None) -> tuple[LibraryCheck, list[KnownItem]]:
    """Print the check of the export folder, then the known-item search unless ``search`` is
    ``None``; a gateway that cannot be reached is said in one line, the check stays printed."""
    check = check_library(settings.export_root, settings.indexing.max_file_bytes)
    print_check(check)
    if search is None:
        return check, []
    try:
        items = known_items(check, search)
    except GatewayError as exc:
        error_console.print(f"[red]search failed[/red]: {exc}", soft_wrap=True)
        return check, []
    except httpx.TransportError as exc:
        error_console.print(f"[red]{transport_failure(exc)}[/red]", soft_wrap=True)
        return check, []
    print_known_items(items)
    return check, items
