"""``/v1/questions``: accept a question, stream its stages, serve its answer and its evidence, cancel it,
and list the caller's recent questions.

A question is refused with 503 while one of its stages has no live worker (the reply names the stage
and how to start it), and a pending question's stream opened, or gone quiet, while a stage's worker
is gone says so with a ``waiting`` event instead of keeping the reader waiting in silence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated, cast

from fastapi import APIRouter, HTTPException, Query, Request, Response, status
from sse_starlette.sse import EventSourceResponse

from services.gateway.asking import accept_question
from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.evidence import cited_file_bytes, evidence_for
from services.gateway.history import (
    HISTORY_KEPT,
    forget,
    kept_questions,
    question_state,
    stored_answer,
    summary_fields,
)
from services.gateway.metrics import require_known_stream
from services.gateway.schemas import (
    EVENT_STREAM_RESPONSES,
    Evidence,
    QuestionAccepted,
    QuestionRequest,
    QuestionStatus,
    QuestionSummary,
    error_responses,
)
from services.gateway.streaming import STREAM_START, LastEventId, event_stream, question_idle_limit
from services.gateway.worker_census import census, no_worker_reason
from shared.contracts import Citation, Event
from shared.events import TERMINAL_STAGE, WAITING_STAGE, fail_question, redis_client
from shared.index_jobs import allowed_roots
from shared.redis_keys import cancelled_key, history_key, stream_kind_key
from shared.topology import QUESTION_QUEUES

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1/questions", tags=["questions"])


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=QuestionAccepted,
    responses=error_responses(503),
)
async def ask(
    body: QuestionRequest, request: Request, client: RedisDep, settings: SettingsDep
) -> QuestionAccepted:
    """Accept a question; with ``conversation_id`` it is a follow-up of that conversation (404 when the
    caller has none by that id), else it starts one named by its own id."""
    accepted = await accept_question(
        request, client, settings.gateway, settings.tasks, body.question, body.options, body.conversation_id
    )
    question_id = accepted.question_id
    return QuestionAccepted(
        id=question_id,
        conversation_id=accepted.conversation_id or question_id,
        status_url=f"/v1/questions/{question_id}",
        events_url=f"/v1/questions/{question_id}/events",
    )


@router.get("", response_model=list[QuestionSummary])
async def history(
    request: Request,
    client: RedisDep,
    limit: Annotated[int, Query(ge=1, le=HISTORY_KEPT)] = 50,
    q: Annotated[str | None, Query(max_length=200, description="words the question contains")] = None,
) -> list[QuestionSummary]:
    """The caller's recent questions, newest first, each with its status; with ``q``, only those
    whose text contains it (any case), searched over the whole kept history."""
    ids = cast(
        list[str], await client.zrevrange(history_key(request.state.caller), 0, -1 if q else limit - 1)
    )
    kept = await kept_questions(client, ids)
    if q:
        wanted = q.casefold().strip()
        kept = [(asked, state) for asked, state in kept if wanted in asked.question.casefold()][:limit]
    return [QuestionSummary(**summary_fields(asked, state)) for asked, state in kept]


async def refuse_cancelled(client: RedisDep, question_id: str) -> None:
    """404 for a question its asker cancelled: ``DELETE`` removed it."""
    if await client.exists(cancelled_key(question_id)):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"question {question_id} was cancelled")


@router.get("/{question_id}", response_model=QuestionStatus)
async def question_status(question_id: str, client: RedisDep) -> QuestionStatus:
    await refuse_cancelled(client, question_id)
    if await stored_answer(client, question_id) is None:
        await require_known_stream(client, "q", question_id)
    return await question_state(client, question_id)


@router.delete("/{question_id}", response_model=QuestionStatus, responses=error_responses(409))
async def cancel(
    question_id: str, request: Request, client: RedisDep, settings: SettingsDep
) -> QuestionStatus:
    """Cancel a pending question and remove it: its stages not yet started are skipped, a reader
    already following its events gets a last ``failed`` event ("cancelled"), and from then on the
    question, its events and its evidence answer 404 and it leaves the caller's history. 409 when it
    has already ended (an answered question is kept)."""
    await refuse_cancelled(client, question_id)
    await require_known_stream(client, "q", question_id)
    state = await question_state(client, question_id)
    if state.status != "pending":
        raise HTTPException(status.HTTP_409_CONFLICT, f"the question has already ended ({state.status})")
    await client.set(cancelled_key(question_id), "1", ex=settings.tasks.event_ttl_s)
    reason = "cancelled by the person who asked"
    await asyncio.to_thread(fail_question, question_id, reason, redis_client(settings.redis_url))
    await forget(client, request.state.caller, question_id)
    return await question_state(client, question_id)


@router.get("/{question_id}/events", response_class=EventSourceResponse, responses=EVENT_STREAM_RESPONSES)
async def question_events(
    question_id: str,
    request: Request,
    client: RedisDep,
    settings: SettingsDep,
    after: LastEventId = STREAM_START,
) -> EventSourceResponse:
    await refuse_cancelled(client, question_id)
    await require_known_stream(client, "q", question_id)
    pending = (await question_state(client, question_id)).status == "pending"
    return event_stream(
        request,
        client,
        question_id,
        TERMINAL_STAGE,
        after,
        question_idle_limit(settings.gateway, settings.tasks),
        annotate=lambda events: saying_when_waiting(question_id, events, check_at_once=pending),
        record_key=stream_kind_key(question_id),
    )


async def saying_when_waiting(
    question_id: str, events: AsyncIterator[dict[str, str]], check_at_once: bool
) -> AsyncIterator[dict[str, str]]:
    """The stream's events, a ``waiting`` event first when ``check_at_once`` (a pending question)
    and a stage has no live worker as the stream opens, and any quiet spell (a keep-alive) while
    one has none a ``waiting`` event too: the reader learns what it waits for at once, not after
    the first keep-alive."""
    if check_at_once and (waiting := await waiting_event(question_id)) is not None:
        yield waiting
    async for sent in events:
        if "comment" not in sent:
            yield sent
            continue
        yield await waiting_event(question_id) or sent


async def waiting_event(question_id: str) -> dict[str, str] | None:
    """The ``waiting`` event naming the stages no live worker serves now; ``None`` while all are."""
    missing = await census.without_worker(QUESTION_QUEUES)
    if not missing:
        return None
    detail = f"waiting for a worker: {no_worker_reason(missing)}"
    waiting = Event(stream_id=question_id, stage=WAITING_STAGE, status="progress", detail=detail)
    return {"event": WAITING_STAGE, "data": waiting.model_dump_json()}


async def stored_citation(client: RedisDep, question_id: str, number: int) -> Citation:
    """Citation ``[number]`` of the question's stored answer; 404 when there is none."""
    await refuse_cancelled(client, question_id)
    answer = await stored_answer(client, question_id)
    if answer is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no answer for question {question_id}")
    citation = next((c for c in answer.citations if c.number == number), None)
    if citation is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the answer has no citation [{number}]")
    return citation


@router.get("/{question_id}/citations/{number}", response_model=Evidence)
async def citation_evidence(
    question_id: str, number: int, client: RedisDep, settings: SettingsDep
) -> Evidence:
    citation = await stored_citation(client, question_id, number)
    return await asyncio.to_thread(
        evidence_for, citation, allowed_roots(settings.indexing, settings.roots_file)
    )


# A cited HTML page is served as a sandbox (its own opaque origin, no script runs, nothing it embeds
# loads): the page shows it in a frame that is sandboxed too, and opening the address directly
# changes nothing.
CITED_HTML_POLICY = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@router.get(
    "/{question_id}/citations/{number}/file",
    response_class=Response,
    responses={
        200: {"content": {"application/pdf": {}, "text/html": {}}, "description": "the cited PDF or page"},
        404: {},
    },
)
async def cited_file(question_id: str, number: int, client: RedisDep, settings: SettingsDep) -> Response:
    """The cited PDF's or HTML page's own bytes, for the page to show the cited page as printed or
    published: read through the safe open under the indexed roots, from the path the stored answer
    names (never one from the request). 404 for any other kind of source, or a file that cannot be
    read now."""
    citation = await stored_citation(client, question_id, number)
    found = await asyncio.to_thread(
        cited_file_bytes, citation, allowed_roots(settings.indexing, settings.roots_file)
    )
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"citation [{number}] has no PDF or page to show now")
    raw, media_type = found
    headers = {"Cache-Control": "private, no-store"}
    if media_type == "text/html":
        headers["Content-Security-Policy"] = CITED_HTML_POLICY
    return Response(raw, media_type=media_type, headers=headers)
