"""``/v1/conversations/{id}``: a conversation's turns, each with its own answer and citations, and
``DELETE`` to erase it.

A conversation is named by its first question's id (``QuestionAccepted.conversation_id``) and belongs
to the key that started it; it lives as long as the question history.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response, status

from services.gateway.deps import RedisDep
from services.gateway.history import (
    StillPendingError,
    conversation_ids,
    erase_conversation,
    kept_questions,
    summary_fields,
)
from services.gateway.schemas import Conversation, ConversationTurn, QuestionId, error_responses

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])


@router.get("/{conversation_id}", response_model=Conversation)
async def conversation(conversation_id: QuestionId, request: Request, client: RedisDep) -> Conversation:
    ids = await conversation_ids(client, request.state.caller, conversation_id)
    if ids is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no conversation {conversation_id}")
    turns = [
        ConversationTurn(**summary_fields(asked, state), answer=state.answer, error=state.error)
        for asked, state in await kept_questions(client, ids)
    ]
    return Conversation(id=conversation_id, turns=turns)


@router.delete("/{conversation_id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(409))
async def delete_conversation(conversation_id: QuestionId, request: Request, client: RedisDep) -> Response:
    """Erase the conversation (a lone question is a conversation of one): its questions leave the
    history, and their answers, citations and events are deleted; the indexed files are untouched.
    404 when the caller has no such conversation, 409 while one of its questions is still pending."""
    try:
        erased = await erase_conversation(client, request.state.caller, conversation_id)
    except StillPendingError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
    if not erased:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no conversation {conversation_id}")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
