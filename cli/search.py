"""``hindsight search QUERY``: ranked passages from your sources, no synthesis, through the gateway.

``app`` holds the one ``search`` command. Mount it as a top-level command (``main_app.command("search")
(search)``): typer turns an added sub-app into a group, which would make it ``hindsight search search``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import httpx
import typer
from rich.console import Console
from rich.table import Table

from cli.client import GatewayError, default_client
from shared.contracts import SearchFilters, SearchMode, SearchRequest, SearchResponse, SourceKind
from shared.settings import get_settings

app = typer.Typer(help="Search your sources by meaning, verbatim, or both; no answer is written.")
console = Console()
SNIPPET_CHARS = 160


def how_found(ranks: dict[str, int]) -> str:
    return ", ".join(f"{leg} #{rank}" for leg, rank in sorted(ranks.items(), key=lambda item: item[1]))


def render(result: SearchResponse) -> None:
    shown = result.resolved_mode.value + (" (auto)" if result.mode is SearchMode.AUTO else "")
    table = Table("#", "source", "how it was found", "passage", title=f"{result.query!r} — {shown}")
    for number, candidate in enumerate(result.candidates, start=1):
        chunk = candidate.chunk
        end = candidate.text_start + len(candidate.text)
        snippet = " ".join(candidate.text.split())[:SNIPPET_CHARS]
        table.add_row(
            str(number),
            f"{chunk.title}\n[dim]{chunk.source_uri}:{candidate.text_start}-{end}[/dim]",
            how_found(candidate.ranks),
            snippet,
        )
    console.print(table)
    legs = ", ".join(f"{leg} {count}" for leg, count in result.legs.items())
    console.print(f"[dim]{len(result.candidates)} results in {result.elapsed_ms:.0f} ms; legs: {legs}[/dim]")
    for note in result.notes:
        console.print(f"[yellow]note[/yellow]: {note}")


@app.command(name="search")
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    mode: Annotated[SearchMode, typer.Option(help="auto, semantic, exact or hybrid.")] = SearchMode.AUTO,
    limit: Annotated[int, typer.Option(min=1, max=100, help="How many passages.")] = 10,
    kind: Annotated[list[SourceKind] | None, typer.Option(help="Only these source kinds.")] = None,
    space: Annotated[list[str] | None, typer.Option(help="Only these spaces/collections.")] = None,
    path_prefix: Annotated[str | None, typer.Option(help="Only files under this path.")] = None,
    date_from: Annotated[datetime | None, typer.Option(help="Only documents dated from.")] = None,
    date_to: Annotated[datetime | None, typer.Option(help="Only documents dated until.")] = None,
    k_adjacent: Annotated[int, typer.Option(min=0, max=3, help="Neighbour chunks to stitch on.")] = 0,
) -> None:
    """Search without synthesis and print the ranked passages with how each was found."""
    settings = get_settings()
    request = SearchRequest(
        query=query,
        mode=mode,
        limit=limit,
        k_adjacent=k_adjacent,
        filters=SearchFilters(
            kinds=kind or None,
            spaces=space or None,
            path_prefix=path_prefix,
            date_from=date_from,
            date_to=date_to,
        ),
    )
    try:
        result = default_client().search(request, settings.search_timeout_s + 5)
    except (GatewayError, httpx.HTTPError) as exc:
        console.print(f"[red]search failed[/red]: {exc}")
        raise typer.Exit(1) from exc
    render(result)
