"""Ranked passages from your sources, no synthesis, through the gateway."""

from __future__ import annotations

import httpx
from rich.table import Table

from cli.client import GatewayError, default_client, transport_failure
from cli.console import console, error_console, shown
from shared.contracts import Candidate, SearchMode, SearchRequest, SearchResponse
from shared.settings import get_settings

SNIPPET_CHARS = 240


def candidate_place(candidate: Candidate) -> str:
    """Where the passage is, as editors and viewers open it: ``path:line`` for Markdown and text,
    ``path#page=N`` for a PDF's page, else the file with the section it sits under."""
    chunk = candidate.chunk
    if candidate.line:
        return f"{chunk.source_uri}:{candidate.line}"
    if chunk.page:
        return f"{chunk.source_uri}#page={chunk.page}"
    section = " › ".join(chunk.heading_path)
    return f"{chunk.source_uri} ({section})" if section else chunk.source_uri


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """The passage on one line, cut at the last whole word within ``limit`` characters (``…`` marks a
    cut), so a command is never shown cut inside a word."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return flat[: cut if cut > 0 else limit] + " …"


def how_found(ranks: dict[str, int]) -> str:
    return ", ".join(f"{leg} #{rank}" for leg, rank in sorted(ranks.items(), key=lambda item: item[1]))


def render(result: SearchResponse) -> None:
    mode = result.resolved_mode.value + (" (auto)" if result.mode is SearchMode.AUTO else "")
    table = Table("#", "source", "how it was found", "passage", title=f"{shown(repr(result.query))} — {mode}")
    for number, candidate in enumerate(result.candidates, start=1):
        table.add_row(
            str(number),
            f"{shown(candidate.chunk.title)}\n[dim]{shown(candidate_place(candidate))}[/dim]",
            how_found(candidate.ranks),
            shown(snippet(candidate.text)),
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
        result = default_client().search(request, get_settings().retrieval.search_timeout_s + 5)
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
