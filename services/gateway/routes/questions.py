"""``/v1/questions``: accept a question, stream its stages, serve its answer and its evidence."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import cast

from fastapi import APIRouter, HTTPException, Request, status
from sse_starlette.sse import EventSourceResponse

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.evidence import evidence_for
from services.gateway.limits import enforce_backpressure
from services.gateway.metrics import require_known_stream, track
from services.gateway.schemas import (
    EVENT_STREAM_RESPONSES,
    Evidence,
    QuestionAccepted,
    QuestionRequest,
    QuestionStatus,
)
from services.gateway.streaming import STREAM_START, LastEventId, event_stream
from services.gateway.workflow import start_question
from shared.contracts import Answer, Question
from shared.events import TERMINAL_STAGE, StreamEntries, answer_key, decode_entry, events_key
from shared.index_jobs import allowed_roots
from shared.logging import bind_question
from shared.topology import QUESTION_QUEUES

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1/questions", tags=["questions"])


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=QuestionAccepted)
async def ask(
    body: QuestionRequest, request: Request, client: RedisDep, settings: SettingsDep
) -> QuestionAccepted:
    question = body.question.strip()
    if not question:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, "the question is empty")
    if len(question) > settings.max_question_chars:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_ENTITY,
            f"the question is {len(question)} characters; the limit is {settings.max_question_chars}",
        )
    await enforce_backpressure(request, client, QUESTION_QUEUES, settings)
    question_id = uuid.uuid4().hex
    accepted = Question(question_id=question_id, question=question, options=body.options)
    with bind_question(question_id):
        log.info("question accepted", extra={"caller": request.state.caller, "chars": len(question)})
        await track(client, "q", question_id, settings.event_ttl_s)
        await asyncio.to_thread(start_question, accepted)
    return QuestionAccepted(
        id=question_id,
        status_url=f"/v1/questions/{question_id}",
        events_url=f"/v1/questions/{question_id}/events",
    )


async def stored_answer(client: RedisDep, question_id: str) -> Answer | None:
    raw = await client.get(answer_key(question_id))
    return Answer.model_validate_json(raw) if raw else None


@router.get("/{question_id}", response_model=QuestionStatus)
async def question_status(question_id: str, client: RedisDep) -> QuestionStatus:
    answer = await stored_answer(client, question_id)
    if answer:
        return QuestionStatus(id=question_id, status="done", answer=answer)
    await require_known_stream(client, "q", question_id)
    last = cast(StreamEntries, await client.xrevrange(events_key(question_id), count=1))
    event = decode_entry(last[0][1]) if last else None
    if event is not None and event.stage == TERMINAL_STAGE and event.status == "failed":
        return QuestionStatus(id=question_id, status="failed", error=event.detail)
    return QuestionStatus(id=question_id, status="pending")


@router.get("/{question_id}/events", response_class=EventSourceResponse, responses=EVENT_STREAM_RESPONSES)
async def question_events(
    question_id: str,
    request: Request,
    client: RedisDep,
    settings: SettingsDep,
    after: LastEventId = STREAM_START,
) -> EventSourceResponse:
    await require_known_stream(client, "q", question_id)
    idle_limit_s = settings.stream_idle_s or settings.question_stall_s + settings.question_time_limit_s
    return event_stream(request, client, question_id, TERMINAL_STAGE, after, idle_limit_s)


@router.get("/{question_id}/citations/{number}", response_model=Evidence)
async def citation_evidence(
    question_id: str, number: int, client: RedisDep, settings: SettingsDep
) -> Evidence:
    answer = await stored_answer(client, question_id)
    if answer is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no answer for question {question_id}")
    citation = next((c for c in answer.citations if c.number == number), None)
    if citation is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the answer has no citation [{number}]")
    return await asyncio.to_thread(evidence_for, citation, allowed_roots(settings))
