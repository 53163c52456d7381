"""``/v1/questions``: accept a question, stream its stages, serve its answer and its evidence, cancel it,
and list the caller's recent questions.

A question is refused with 503 while one of its stages has no live worker (the reply names the stage
and how to start it), and a stream that goes quiet while a stage's worker has gone says so with a
``waiting`` event instead of keeping the reader waiting in silence.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, cast

from fastapi import APIRouter, HTTPException, Query, Request, status
from sse_starlette.sse import EventSourceResponse

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.evidence import evidence_for
from services.gateway.limits import enforce_backpressure
from services.gateway.metrics import kind_key, require_known_stream, track
from services.gateway.schemas import (
    EVENT_STREAM_RESPONSES,
    Evidence,
    QuestionAccepted,
    QuestionRequest,
    QuestionStatus,
    QuestionSummary,
    error_responses,
)
from services.gateway.streaming import STREAM_START, LastEventId, event_stream
from services.gateway.worker_census import census, worker_for
from services.gateway.workflow import start_question
from shared.contracts import Answer, Event, Question
from shared.events import (
    TERMINAL_STAGE,
    WAITING_STAGE,
    StreamEntries,
    answer_key,
    cancelled_key,
    decode_entry,
    events_key,
    fail_question,
    redis_client,
)
from shared.index_jobs import allowed_roots
from shared.logging import bind_question
from shared.settings import Settings
from shared.topology import QUESTION_QUEUES, Queue

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1/questions", tags=["questions"])
HISTORY_KEPT = 200


def history_key(caller: str) -> str:
    """A sorted set of the caller's question ids, scored by when each was asked."""
    return f"hindsight:history:{caller}"


def asked_key(question_id: str) -> str:
    """The question as it was accepted (its text and options), kept as long as its events."""
    return f"hindsight:question:{question_id}"


def spoken_list(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"


def no_worker_reason(queues: list[Queue]) -> str:
    """Which stages have no live worker, which workers to start, and how."""
    plural = "s" if len(queues) > 1 else ""
    stages = spoken_list([q.value for q in queues])
    workers = spoken_list([worker_for(q) for q in queues])
    return (
        f"no live worker for the {stages} stage{plural} (the {workers} worker{plural}): start "
        f"{'them' if plural else 'it'} with `hindsight up` (in Docker: `docker compose up -d`); "
        "`hindsight status` shows what runs"
    )


async def refuse_without_workers(settings: Settings) -> None:
    if not settings.refuse_without_workers:
        return
    missing = await census.without_worker(QUESTION_QUEUES)
    if missing:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, no_worker_reason(missing))


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=QuestionAccepted,
    responses=error_responses(503),
)
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
    await refuse_without_workers(settings)
    question_id = uuid.uuid4().hex
    accepted = Question(question_id=question_id, question=question, options=body.options)
    with bind_question(question_id):
        log.info("question accepted", extra={"caller": request.state.caller, "chars": len(question)})
        await track(client, "q", question_id, settings.event_ttl_s)
        await remember(client, request.state.caller, accepted, settings.event_ttl_s)
        await asyncio.to_thread(start_question, accepted)
    return QuestionAccepted(
        id=question_id,
        status_url=f"/v1/questions/{question_id}",
        events_url=f"/v1/questions/{question_id}/events",
    )


async def remember(client: RedisDep, caller: str, question: Question, ttl_s: int) -> None:
    """Add the question to its caller's history (the newest :data:`HISTORY_KEPT`, for ``ttl_s``)."""
    key = history_key(caller)
    pipe = client.pipeline()
    pipe.set(asked_key(question.question_id), question.model_dump_json(), ex=ttl_s)
    pipe.zadd(key, {question.question_id: question.started_at})
    pipe.zremrangebyscore(key, "-inf", time.time() - ttl_s)
    pipe.zremrangebyrank(key, 0, -HISTORY_KEPT - 1)
    pipe.expire(key, ttl_s)
    await pipe.execute()


@router.get("", response_model=list[QuestionSummary])
async def history(
    request: Request, client: RedisDep, limit: Annotated[int, Query(ge=1, le=HISTORY_KEPT)] = 50
) -> list[QuestionSummary]:
    """The caller's recent questions, newest first, each with its status."""
    ids = cast(list[str], await client.zrevrange(history_key(request.state.caller), 0, limit - 1))
    summaries = []
    for question_id in ids:
        raw = await client.get(asked_key(question_id))
        if raw is None:
            continue
        asked = Question.model_validate_json(raw)
        state = await question_state(client, question_id)
        summaries.append(
            QuestionSummary(
                id=question_id, question=asked.question, asked_at=asked.started_at, status=state.status
            )
        )
    return summaries


async def stored_answer(client: RedisDep, question_id: str) -> Answer | None:
    raw = await client.get(answer_key(question_id))
    return Answer.model_validate_json(raw) if raw else None


async def last_event(client: RedisDep, question_id: str) -> Event | None:
    last = cast(StreamEntries, await client.xrevrange(events_key(question_id), count=1))
    return decode_entry(last[0][1]) if last else None


async def question_state(client: RedisDep, question_id: str) -> QuestionStatus:
    answer = await stored_answer(client, question_id)
    if answer:
        return QuestionStatus(id=question_id, status="done", answer=answer)
    event = await last_event(client, question_id)
    if event is not None and event.stage == TERMINAL_STAGE and event.status == "failed":
        return QuestionStatus(id=question_id, status="failed", error=event.detail)
    return QuestionStatus(id=question_id, status="pending")


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
    await client.set(cancelled_key(question_id), "1", ex=settings.event_ttl_s)
    reason = "cancelled by the person who asked"
    await asyncio.to_thread(fail_question, question_id, reason, redis_client(settings.redis_url))
    await client.zrem(history_key(request.state.caller), question_id)
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
    idle_limit_s = settings.stream_idle_s or settings.question_stall_s + settings.question_time_limit_s
    return event_stream(
        request,
        client,
        question_id,
        TERMINAL_STAGE,
        after,
        idle_limit_s,
        annotate=lambda events: saying_when_waiting(question_id, events),
        record_key=kind_key(question_id),
    )


async def saying_when_waiting(
    question_id: str, events: AsyncIterator[dict[str, str]]
) -> AsyncIterator[dict[str, str]]:
    """The stream's events; a quiet spell while a stage has no live worker becomes a ``waiting`` event."""
    async for sent in events:
        if "comment" not in sent:
            yield sent
            continue
        missing = await census.without_worker(QUESTION_QUEUES)
        if not missing:
            yield sent
            continue
        detail = f"waiting for a worker: {no_worker_reason(missing)}"
        waiting = Event(stream_id=question_id, stage=WAITING_STAGE, status="progress", detail=detail)
        yield {"event": WAITING_STAGE, "data": waiting.model_dump_json()}


@router.get("/{question_id}/citations/{number}", response_model=Evidence)
async def citation_evidence(
    question_id: str, number: int, client: RedisDep, settings: SettingsDep
) -> Evidence:
    await refuse_cancelled(client, question_id)
    answer = await stored_answer(client, question_id)
    if answer is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no answer for question {question_id}")
    citation = next((c for c in answer.citations if c.number == number), None)
    if citation is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the answer has no citation [{number}]")
    return await asyncio.to_thread(evidence_for, citation, allowed_roots(settings))
