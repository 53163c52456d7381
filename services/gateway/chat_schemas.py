"""The OpenAI chat-completions shapes ``/v1/chat/completions`` and ``/v1/models`` speak, and Hindsight's
additions that standard clients ignore (``citations``, ``hindsight``)."""

from __future__ import annotations

import time
from typing import Any, Final, Literal

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field

from shared.contracts import Citation

MODEL_ID: Final = "hindsight"
MAX_MESSAGES = 64


class TextPart(BaseModel):
    """A content part; only text parts carry anything Hindsight can read."""

    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None


class ChatMessageIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(part.text for part in self.content if part.type == "text" and part.text)
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    """The standard request; sampling options (temperature, max_tokens, …) are accepted and ignored:
    the answer is the pipeline's, cited, not sampled."""

    model_config = ConfigDict(extra="ignore")
    model: Literal["hindsight"] = MODEL_ID
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class Usage(BaseModel):
    """Hindsight counts no tokens: zeros, so clients that sum usage still can."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class HindsightFields(BaseModel):
    """Which question answered, its conversation, and what it searched for."""

    question_id: str
    conversation_id: str
    searched_for: str
    mode: str


class Completion(BaseModel):
    """What a completion and each of its chunks share: the id, when, and the model."""

    id: str
    created: int = Field(default_factory=lambda: int(time.time()))
    model: str = MODEL_ID


class ChatCompletion(Completion):
    object: Literal["chat.completion"] = "chat.completion"
    choices: list[Choice]
    usage: Usage = Field(default_factory=Usage)
    citations: list[Citation] = Field(default_factory=list)
    hindsight: HindsightFields


class ChunkDelta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: ChunkDelta
    finish_reason: Literal["stop"] | None = None


class ChatCompletionChunk(Completion):
    """One streamed ``chat.completion.chunk``; the last one also carries the citations."""

    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    choices: list[ChunkChoice]
    citations: list[Citation] | None = None
    hindsight: HindsightFields | None = None


class ModelCard(BaseModel):
    id: str = MODEL_ID
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "hindsight"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard] = Field(default_factory=lambda: [ModelCard()])


OPENAI_PATHS = ("/v1/chat/", "/v1/models")


def speaks_openai(request: Request) -> bool:
    """A request to the OpenAI-compatible endpoints, whose clients read OpenAI's error object."""
    return request.url.path.startswith(OPENAI_PATHS)


def openai_error(status_code: int | None, message: str) -> dict[str, Any]:
    """OpenAI's error object (``{"error": {"message": …}}``), which its clients raise with the message."""
    return {"error": {"message": message, "type": "hindsight_error", "code": status_code, "param": None}}
