"""The question history in Redis: each caller's recent questions, the questions as accepted, their
answers' state, and conversations (a caller's ordered question ids).

Everything here lives as long as a question's events (``EVENT_TTL_S``) and leaves with it: a
conversation is a list of question ids with the same time to live, refreshed by each new turn, and a
cancelled question leaves its conversation as it leaves the history.
"""

from __future__ import annotations

import re
import time
from typing import cast

import redis.asyncio as aioredis

from services.gateway.schemas import QuestionStatus
from shared.contracts import MAX_TURN_ANSWER_CHARS, MAX_TURNS_READ, Answer, Event, Question, Turn
from shared.events import TERMINAL_STAGE, StreamEntries, decode_entry
from shared.redis_keys import answer_key, asked_key, conversation_key, events_key, history_key

HISTORY_KEPT = 200
CITATION_MARK = re.compile(r"\s*\[\d+\]")


async def remember(client: aioredis.Redis, caller: str, question: Question, ttl_s: int) -> None:
    """Add the question to its caller's history (the newest :data:`HISTORY_KEPT`, for ``ttl_s``) and
    to the end of its conversation."""
    key = history_key(caller)
    pipe = client.pipeline()
    pipe.set(asked_key(question.question_id), question.model_dump_json(), ex=ttl_s)
    pipe.zadd(key, {question.question_id: question.started_at})
    pipe.zremrangebyscore(key, "-inf", time.time() - ttl_s)
    pipe.zremrangebyrank(key, 0, -HISTORY_KEPT - 1)
    pipe.expire(key, ttl_s)
    if question.conversation_id:
        turns = conversation_key(caller, question.conversation_id)
        pipe.rpush(turns, question.question_id)
        pipe.expire(turns, ttl_s)
    await pipe.execute()


async def forget(client: aioredis.Redis, caller: str, question_id: str) -> None:
    """Take a cancelled question out of its caller's history and its conversation."""
    asked = await asked_question(client, question_id)
    await client.zrem(history_key(caller), question_id)
    if asked is not None and asked.conversation_id:
        await client.lrem(conversation_key(caller, asked.conversation_id), 0, question_id)


class StillPendingError(Exception):
    """A conversation with a question still being answered is not erased (cancel that one first)."""


async def erase_conversation(client: aioredis.Redis, caller: str, conversation_id: str) -> bool:
    """Delete the caller's conversation and everything kept of its questions (the questions as
    accepted, their answers and events), and take them out of the history; ``False`` when the
    caller has no such conversation. Raises :class:`StillPendingError` when one is still pending."""
    ids = await conversation_ids(client, caller, conversation_id)
    if ids is None:
        in_history = await client.zscore(history_key(caller), conversation_id) is not None
        ids = [conversation_id] if in_history else None
    if ids is None:
        return False
    for _, state in await kept_questions(client, ids):
        if state.status == "pending":
            raise StillPendingError(f"question {state.id} is still being answered: cancel it first")
    pipe = client.pipeline()
    pipe.zrem(history_key(caller), *ids)
    pipe.delete(conversation_key(caller, conversation_id))
    for question_id in ids:
        pipe.delete(asked_key(question_id), answer_key(question_id), events_key(question_id))
    await pipe.execute()
    return True


async def asked_question(client: aioredis.Redis, question_id: str) -> Question | None:
    raw = await client.get(asked_key(question_id))
    return Question.model_validate_json(raw) if raw else None


def summary_fields(asked: Question, state: QuestionStatus) -> dict[str, object]:
    """What the history and a conversation say of a question: its id, text, when, status, conversation."""
    return {
        "id": state.id,
        "question": asked.question,
        "asked_at": asked.started_at,
        "status": state.status,
        "conversation_id": asked.conversation_id or state.id,
    }


async def kept_questions(
    client: aioredis.Redis, question_ids: list[str]
) -> list[tuple[Question, QuestionStatus]]:
    """Each question still kept, as accepted, with its state (pending, done with its answer, failed)."""
    kept = []
    for question_id in question_ids:
        asked = await asked_question(client, question_id)
        if asked is not None:
            kept.append((asked, await question_state(client, question_id)))
    return kept


async def conversation_ids(client: aioredis.Redis, caller: str, conversation_id: str) -> list[str] | None:
    """The conversation's question ids, oldest first; ``None`` when the caller has no such one."""
    ids = cast(list[str], await client.lrange(conversation_key(caller, conversation_id), 0, -1))
    return ids or None


async def earlier_turns(client: aioredis.Redis, question_ids: list[str]) -> list[Turn]:
    """The latest :data:`MAX_TURNS_READ` turns as the planner reads them (the answers without their
    ``[n]`` markers, cut to :data:`MAX_TURN_ANSWER_CHARS`)."""
    turns = []
    for question_id in question_ids[-MAX_TURNS_READ:]:
        asked = await asked_question(client, question_id)
        if asked is None:
            continue
        answer = await stored_answer(client, question_id)
        searched = answer.question if answer and answer.question != asked.question else None
        text = CITATION_MARK.sub("", answer.markdown)[:MAX_TURN_ANSWER_CHARS] if answer else ""
        turns.append(Turn(question=asked.question, searched_for=searched, answer=text))
    return turns


async def stored_answer(client: aioredis.Redis, question_id: str) -> Answer | None:
    raw = await client.get(answer_key(question_id))
    return Answer.model_validate_json(raw) if raw else None


async def last_event(client: aioredis.Redis, question_id: str) -> Event | None:
    last = cast(StreamEntries, await client.xrevrange(events_key(question_id), count=1))
    return decode_entry(last[0][1]) if last else None


async def question_state(client: aioredis.Redis, question_id: str) -> QuestionStatus:
    answer = await stored_answer(client, question_id)
    if answer:
        return QuestionStatus(id=question_id, status="done", answer=answer)
    event = await last_event(client, question_id)
    if event is not None and event.stage == TERMINAL_STAGE and event.status == "failed":
        return QuestionStatus(id=question_id, status="failed", error=event.detail)
    return QuestionStatus(id=question_id, status="pending")
