"""Ranked passages from your sources, no synthesis, through the gateway."""

from __future__ import annotations

import httpx
from rich.table import Table

from cli.client import GatewayError, default_client, transport_failure
from cli.console import console, error_console, shown
from shared.contracts import SearchMode, SearchRequest, SearchResponse
from shared.settings import get_settings

SNIPPET_CHARS = 160


def how_found(ranks: dict[str, int]) -> str:
    return ", ".join(f"{leg} #{rank}" for leg, rank in sorted(ranks.items(), key=lambda item: item[1]))


def render(result: SearchResponse) -> None:
    mode = result.resolved_mode.value + (" (auto)" if result.mode is SearchMode.AUTO else "")
    table = Table("#", "source", "how it was found", "passage", title=f"{shown(repr(result.query))} — {mode}")
    for number, candidate in enumerate(result.candidates, start=1):
        chunk = candidate.chunk
        end = candidate.text_start + len(candidate.text)
        snippet = " ".join(candidate.text.split())[:SNIPPET_CHARS]
        table.add_row(
            str(number),
            f"{shown(chunk.title)}\n[dim]{shown(chunk.source_uri)}:{candidate.text_start}-{end}[/dim]",
            how_found(candidate.ranks),
            shown(snippet),
        )
    console.print(table)
    legs = ", ".join(f"{leg} {count}" for leg, count in result.legs.items())
    console.print(f"[dim]{len(result.candidates)} results in {result.elapsed_ms:.0f} ms; legs: {legs}[/dim]")
    for note in result.notes:
        console.print(f"[yellow]note[/yellow]: {shown(note)}")


def search_passages(request: SearchRequest, as_json: bool = False) -> SearchResponse | None:
    """Search without synthesis and print the ranked passages with how each was found, or the
    response as JSON; ``None`` and the reason printed when the search failed."""
    try:
        result = default_client().search(request, get_settings().search_timeout_s + 5)
    except GatewayError as exc:
        error_console.print(f"[red]search failed[/red]: {exc}", soft_wrap=True)
        return None
    except httpx.TransportError as exc:
        error_console.print(f"[red]{transport_failure(exc)}[/red]", soft_wrap=True)
        return None
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        render(result)
    return result
