"""Accepting a question, whichever API it came through (``/v1/questions``, the OpenAI-compatible chat
endpoint, MCP): the length limit, backpressure, live workers, the caller's history, then the chain.

A question names the conversation it continues, or starts one named by its own id; a continued
conversation's latest turns travel with the question for the planner (the chat endpoint passes the
request's own messages instead).
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from fastapi import HTTPException, Request, status

from services.gateway.deps import RedisDep
from services.gateway.history import conversation_ids, earlier_turns, remember
from services.gateway.limits import enforce_backpressure
from services.gateway.metrics import track
from services.gateway.worker_census import census, no_worker_reason
from services.gateway.workflow import start_question
from shared.contracts import Question, QuestionOptions, Turn
from shared.logging import bind_question
from shared.settings import GatewaySettings, TaskSettings
from shared.topology import QUESTION_QUEUES

log = logging.getLogger(__name__)


def checked_text(question: str, settings: GatewaySettings) -> str:
    """The question stripped; 422 when it is empty or over ``MAX_QUESTION_CHARS``."""
    question = question.strip()
    if not question:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_ENTITY, "the question is empty")
    if len(question) > settings.max_question_chars:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_ENTITY,
            f"the question is {len(question)} characters; the limit is {settings.max_question_chars}",
        )
    return question


async def refuse_without_workers(settings: GatewaySettings) -> None:
    if not settings.refuse_without_workers:
        return
    missing = await census.without_worker(QUESTION_QUEUES)
    if missing:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, no_worker_reason(missing))


async def conversation_turns(client: RedisDep, caller: str, conversation_id: str) -> list[Turn]:
    """The latest turns of the caller's conversation; 404 when it has none by that id."""
    ids = await conversation_ids(client, caller, conversation_id)
    if ids is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"no conversation {conversation_id}: it never existed, was another key's, or expired "
            "with the question history",
        )
    return await earlier_turns(client, ids)


async def accept_question(
    request: Request,
    client: RedisDep,
    settings: GatewaySettings,
    tasks: TaskSettings,
    text: str,
    options: QuestionOptions,
    conversation_id: str | None = None,
    history: list[Turn] | None = None,
) -> Question:
    """Check, record and start the question; ``history`` (the chat endpoint's messages) stands in for
    a stored conversation's turns."""
    text = checked_text(text, settings)
    caller = request.state.caller
    if conversation_id is not None and history is None:
        history = await conversation_turns(client, caller, conversation_id)
    await enforce_backpressure(request, client, QUESTION_QUEUES, settings)
    await refuse_without_workers(settings)
    question_id = uuid.uuid4().hex
    accepted = Question(
        question_id=question_id,
        question=text,
        options=options,
        conversation_id=conversation_id or question_id,
        history=history or [],
    )
    with bind_question(question_id):
        log.info("question accepted", extra={"caller": caller, "chars": len(text)})
        await track(client, "q", question_id, tasks.event_ttl_s)
        await remember(client, caller, accepted, tasks.event_ttl_s)
        await asyncio.to_thread(start_question, accepted)
    return accepted
