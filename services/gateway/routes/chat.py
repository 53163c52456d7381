"""OpenAI-compatible ``POST /v1/chat/completions`` and ``GET /v1/models``: any OpenAI client (Open WebUI,
LibreChat, the ``openai`` SDK) can use Hindsight as a "model".

The request's messages are the conversation: the last user message is the question, the earlier
user and assistant messages its history (a follow-up is made standalone from them, as in a stored
conversation). The answer is the assistant message: the cited Markdown with its ``[n]`` markers and
a sources list, plus the structured citations in ``citations``, which standard clients ignore.
Streamed (``stream: true``), the answer arrives as ``chat.completion.chunk`` server-sent events once
the pipeline wrote it, ending with ``data: [DONE]``. The same keys, rate limits, backpressure and
refusals as ``/v1/questions``; a question that fails is a 502 (streamed: an ``error`` object).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

from fastapi import APIRouter, HTTPException, Request, status

from services.gateway.asking import accept_question
from services.gateway.chat_schemas import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatMessageIn,
    Choice,
    ChunkChoice,
    ChunkDelta,
    HindsightFields,
    ModelList,
    openai_error,
)
from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.history import CITATION_MARK
from services.gateway.schemas import EVENT_STREAM_RESPONSES, error_responses
from services.gateway.streaming import (
    STREAM_START,
    SentEvents,
    event_stream,
    question_idle_limit,
    stream_events,
)
from shared.citations import answer_with_sources
from shared.contracts import (
    MAX_TURN_ANSWER_CHARS,
    MAX_TURNS_READ,
    Answer,
    Event,
    Question,
    QuestionOptions,
    Turn,
)
from shared.events import TERMINAL_STAGE
from shared.redis_keys import stream_kind_key
from shared.stage_events import carried_answer

router = APIRouter(prefix="/v1", tags=["openai-compatible"])
SOURCES_HEADING = "\n\nSources:\n"


@router.get("/models", response_model=ModelList)
async def models() -> ModelList:
    """The one model Hindsight serves: ``hindsight``, your own research, cited."""
    return ModelList()


@router.post(
    "/chat/completions",
    response_model=ChatCompletion,
    responses={**EVENT_STREAM_RESPONSES, **error_responses(502, 503)},
)
async def chat_completions(
    body: ChatCompletionRequest, request: Request, client: RedisDep, settings: SettingsDep
) -> object:
    text, history = conversation_of(body.messages)
    asked = await accept_question(
        request, client, settings.gateway, settings.tasks, text, QuestionOptions(), history=history
    )
    idle_limit_s = question_idle_limit(settings.gateway, settings.tasks)
    if body.stream:
        return event_stream(
            request,
            client,
            asked.question_id,
            TERMINAL_STAGE,
            STREAM_START,
            idle_limit_s,
            annotate=lambda events: completion_chunks(events, asked),
            record_key=stream_kind_key(asked.question_id),
        )
    events = stream_events(request, client, asked.question_id, TERMINAL_STAGE, STREAM_START, idle_limit_s)
    return completion(await final_answer(events), asked)


def conversation_of(messages: list[ChatMessageIn]) -> tuple[str, list[Turn]]:
    """The last user message, and the user/assistant exchanges before it as turns (the answers
    without their sources list and ``[n]`` markers); 422 when the last message is not the user's."""
    spoken = [m for m in messages if m.role in ("user", "assistant") and m.text().strip()]
    if not spoken or spoken[-1].role != "user":
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_ENTITY, "the last message must be the user's question, as text"
        )
    turns: list[Turn] = []
    for message in spoken[:-1]:
        if message.role == "user":
            turns.append(Turn(question=message.text().strip()))
        elif turns:
            answer = CITATION_MARK.sub("", message.text().split(SOURCES_HEADING)[0]).strip()
            turns[-1].answer = answer[:MAX_TURN_ANSWER_CHARS]
    return spoken[-1].text(), turns[-MAX_TURNS_READ:]


async def final_answer(events: AsyncIterator[dict[str, str]]) -> Answer:
    """The answer the stream ends with; 502 with the reason when the question failed."""
    async for sent in events:
        if sent.get("event") != TERMINAL_STAGE:
            continue
        event = Event.model_validate_json(sent["data"])
        if event.status == "done":
            return carried_answer(event)
        raise HTTPException(status.HTTP_502_BAD_GATEWAY, f"the question failed: {event.detail}")
    raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the client left before the answer was written")


def hindsight_fields(answer: Answer, asked: Question) -> HindsightFields:
    return HindsightFields(
        question_id=asked.question_id,
        conversation_id=asked.conversation_id or asked.question_id,
        searched_for=answer.question,
        mode=answer.mode,
    )


def completion(answer: Answer, asked: Question) -> ChatCompletion:
    return ChatCompletion(
        id=f"chatcmpl-{asked.question_id}",
        choices=[Choice(message=AssistantMessage(content=answer_with_sources(answer)))],
        citations=answer.citations,
        hindsight=hindsight_fields(answer, asked),
    )


def chunk_event(chunk: ChatCompletionChunk) -> dict[str, str]:
    return {"data": chunk.model_dump_json(exclude_none=True)}


async def completion_chunks(events: SentEvents, asked: Question) -> SentEvents:
    """The question's stage events as ``chat.completion.chunk`` events: the assistant's role at once,
    a comment per stage (keeping the connection alive), the answer a line a chunk, a last chunk with
    ``finish_reason`` and the citations, then ``[DONE]``."""
    chunk_id = f"chatcmpl-{asked.question_id}"
    yield chunk_event(
        ChatCompletionChunk(id=chunk_id, choices=[ChunkChoice(delta=ChunkDelta(role="assistant"))])
    )
    async for sent in events:
        if sent.get("event") != TERMINAL_STAGE:
            yield {"comment": f"{sent.get('event', 'keep-alive')}"}
            continue
        event = Event.model_validate_json(sent["data"])
        if event.status != "done":
            yield {"data": json.dumps(openai_error(None, f"the question failed: {event.detail}"))}
            break
        answer = carried_answer(event)
        for line in re.split(r"(?<=\n)", answer_with_sources(answer)):
            if line:
                yield chunk_event(
                    ChatCompletionChunk(id=chunk_id, choices=[ChunkChoice(delta=ChunkDelta(content=line))])
                )
        last = ChunkChoice(delta=ChunkDelta(), finish_reason="stop")
        yield chunk_event(
            ChatCompletionChunk(
                id=chunk_id,
                choices=[last],
                citations=answer.citations,
                hindsight=hindsight_fields(answer, asked),
            )
        )
        break
    yield {"data": "[DONE]"}
