"""Hindsight as an MCP server (the official ``mcp`` SDK): the tools an assistant calls, each a request
to a Hindsight gateway's HTTP API, so keys, limits and refusals are the API's own.

Two transports serve the same tools: ``hindsight mcp`` (stdio, for desktop assistants; requests go
to the configured gateway with this machine's key) and Streamable HTTP at ``/mcp`` on the gateway
(requests go to the gateway itself with the caller's key). A refusal or an unreachable gateway is a
tool error carrying the sentence the CLI prints for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

import httpx
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from shared.citations import answer_with_sources, citation_place
from shared.contracts import Answer, Citation, SearchResponse
from shared.events import TERMINAL_STAGE
from shared.refusals import NOTHING_TO_ASK, NOTHING_TO_SEARCH, EventLines, refusal_of, transport_failure
from shared.stage_events import carried_answer

ConnectGateway = Callable[[Context], httpx.AsyncClient]
PASSAGE_CHARS = 700
# Advertised, not validated by the SDK: a blank text is refused by the tool with the CLI's sentence.
NOT_BLANK = {"minLength": 1, "pattern": r"\S"}
INSTRUCTIONS = (
    "Hindsight searches the user's own research: their notes, documents and Perplexity.ai threads. "
    "Use `ask` for a written answer whose [n] markers cite passages at path:line, each quote found in "
    "its file (which says nothing of whether it answers); `search` for ranked passages without an "
    "answer; `get_passage` to read a cited passage in its context; `list_sources` for what is "
    "indexed. Quote the citations' path:line to the user."
)


class Passage(BaseModel):
    rank: int
    title: str
    path: str
    line: int | None = Field(description="1-based line of the file where the passage starts")
    score: float = Field(description="fused retrieval score (higher is better)")
    found_by: list[str] = Field(
        description="the search legs that found it: dense:N (by meaning; 0 the question as asked, "
        "1… the planner's rewordings), hyde (by meaning, from a drafted answer), bm25 (keywords), "
        "exact (the words as written)"
    )
    text: str


class SearchResult(BaseModel):
    query: str
    mode: str = Field(description="the mode that ran (auto resolves to one of the others)")
    passages: list[Passage]
    notes: list[str] = []


class CitedPassage(BaseModel):
    number: int = Field(description="the [n] marker in the answer")
    title: str
    path: str
    line: int | None
    place: str = Field(description="path:line, what editors open")
    quote: str
    verified: bool = Field(
        description="quote found in file: the quote is in the indexed text verbatim (not that it answers)"
    )


class AskResult(BaseModel):
    answer: str = Field(description="Markdown with [n] markers, then the sources list")
    citations: list[CitedPassage]
    question_id: str = Field(description="for get_passage")
    conversation_id: str = Field(description="pass it to ask again for a follow-up question")
    searched_for: str = Field(description="the standalone question searched (a follow-up rewritten)")


class PassageInContext(BaseModel):
    number: int
    title: str
    path: str
    line: int | None
    before: str
    quote: str
    after: str
    located: bool = Field(description="the quote was found in the file as it is now")
    verified: bool


class Source(BaseModel):
    folder: str
    documents: int
    watched: bool
    last_sync: float | None = Field(description="when the last sync started (Unix time), if any")
    perplexity_spaces: dict[str, int] = Field(
        default_factory=dict, description="documents per Perplexity space, for an export folder"
    )


async def call(
    connect: ConnectGateway, ctx: Context, send: Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]
) -> Any:
    """One request to the gateway; its JSON, or a :class:`ToolError` with the CLI's sentence."""
    try:
        async with connect(ctx) as http:
            response = await send(http)
    except httpx.TransportError as exc:
        raise ToolError(transport_failure(exc)) from exc
    if response.is_error:
        raise ToolError(refusal_of(response))
    return response.json()


def written(text: str, refusal: str) -> str:
    """``text`` when it holds more than whitespace; else a :class:`ToolError` with ``refusal``, the
    sentence the CLI prints for an empty question or query (before any request to the gateway)."""
    if not text.strip():
        raise ToolError(refusal)
    return text


def cited(c: Citation) -> CitedPassage:
    return CitedPassage(
        number=c.number,
        title=c.title,
        path=c.source_uri,
        line=c.line,
        place=citation_place(c),
        quote=c.quote,
        verified=c.verified,
    )


async def answer_of(connect: ConnectGateway, ctx: Context, question_id: str) -> Answer:
    """Follow the question's events to its answer; a failed question is a tool error with its reason."""
    lines = EventLines()
    try:
        async with connect(ctx) as http:
            path = f"/v1/questions/{question_id}/events"
            async with http.stream("GET", path, timeout=httpx.Timeout(30.0, read=None)) as response:
                if response.is_error:
                    await response.aread()
                    raise ToolError(refusal_of(response))
                async for line in response.aiter_lines():
                    event = lines.feed(line)
                    if event is None or event.stage != TERMINAL_STAGE:
                        continue
                    if event.status == "done":
                        return carried_answer(event)
                    raise ToolError(f"the question failed: {event.detail}")
    except httpx.TransportError as exc:
        raise ToolError(transport_failure(exc)) from exc
    raise ToolError("the gateway closed the question's events before its answer")


def hindsight_mcp(connect: ConnectGateway) -> MCPServer:
    """The server with its four tools; ``connect`` opens an HTTP client of the gateway for a call."""
    server = MCPServer("hindsight", instructions=INSTRUCTIONS)

    @server.tool()
    async def search(
        query: Annotated[
            str, Field(max_length=2000, description="what to look for", json_schema_extra=NOT_BLANK)
        ],
        ctx: Context,
        mode: Annotated[
            Literal["auto", "semantic", "exact", "hybrid"],
            Field(description="semantic: by meaning; exact: the words as written; hybrid: both"),
        ] = "auto",
        limit: Annotated[int, Field(ge=1, le=50, description="how many passages")] = 10,
    ) -> SearchResult:
        """Search the user's notes, documents and Perplexity threads for passages, without writing an
        answer: each passage with its file path, line, score and the search legs that found it."""
        body = {"query": written(query, NOTHING_TO_SEARCH), "mode": mode, "limit": limit}
        found = SearchResponse.model_validate(
            await call(connect, ctx, lambda http: http.post("/v1/search", json=body, timeout=60.0))
        )
        passages = [
            Passage(
                rank=rank,
                title=c.chunk.title,
                path=c.chunk.source_uri,
                line=c.line,
                score=round(c.fused_score, 4),
                found_by=sorted(c.ranks),
                text=c.text[:PASSAGE_CHARS],
            )
            for rank, c in enumerate(found.candidates, start=1)
        ]
        return SearchResult(query=query, mode=found.resolved_mode.value, passages=passages, notes=found.notes)

    @server.tool()
    async def ask(
        question: Annotated[
            str, Field(description="the question, in the user's words", json_schema_extra=NOT_BLANK)
        ],
        ctx: Context,
        conversation_id: Annotated[
            str | None,
            Field(description="a previous ask's conversation_id, when this question follows it up"),
        ] = None,
    ) -> AskResult:
        """Answer a question from the user's own research, citing each claim with [n]: every citation
        has the file's path:line, the exact quote and whether it was verified. For a follow-up
        ("how often is it fed?"), pass the earlier answer's conversation_id."""
        body: dict[str, Any] = {"question": written(question, NOTHING_TO_ASK)}
        if conversation_id:
            body["conversation_id"] = conversation_id
        accepted = await call(connect, ctx, lambda http: http.post("/v1/questions", json=body))
        answer = await answer_of(connect, ctx, accepted["id"])
        return AskResult(
            answer=answer_with_sources(answer),
            citations=[cited(c) for c in answer.citations],
            question_id=accepted["id"],
            conversation_id=accepted["conversation_id"],
            searched_for=answer.question,
        )

    @server.tool()
    async def get_passage(
        question_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$", description="from ask")],
        number: Annotated[int, Field(ge=1, description="the citation's [n]")],
        ctx: Context,
    ) -> PassageInContext:
        """Read a cited passage in its file: the quote with the text before and after it, its path
        and line, and whether the file still holds it."""
        path = f"/v1/questions/{question_id}/citations/{number}"
        found = await call(connect, ctx, lambda http: http.get(path))
        return PassageInContext(
            number=found["number"],
            title=found["title"],
            path=found["source_uri"],
            line=found.get("line"),
            before=found.get("before", ""),
            quote=found["quote"],
            after=found.get("after", ""),
            located=found.get("located", False),
            verified=found.get("verified", False),
        )

    @server.tool()
    async def list_sources(ctx: Context) -> list[Source]:
        """What Hindsight has indexed: each folder with its documents, whether it is watched, when it
        was last synced, and for the Perplexity export folder its spaces with their documents."""
        folders = await call(connect, ctx, lambda http: http.get("/v1/library"))
        return [
            Source(
                folder=f["root"],
                documents=f.get("documents", 0),
                watched=f.get("watched", False),
                last_sync=f.get("synced_at"),
                perplexity_spaces=f.get("spaces") or {},
            )
            for f in folders
        ]

    return server
