"""``/v1/conversations/{id}``: a conversation's turns, each with its own answer and citations.

A conversation is named by its first question's id (``QuestionAccepted.conversation_id``) and belongs
to the key that started it; it lives as long as the question history.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, status

from services.gateway.deps import RedisDep
from services.gateway.history import conversation_ids, kept_questions, summary_fields
from services.gateway.schemas import Conversation, ConversationTurn, QuestionId

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
