"""HTTP request and response bodies of the gateway."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from shared.contracts import Answer, QuestionOptions, ScanReport


class QuestionRequest(BaseModel):
    question: str = Field(min_length=1, max_length=2000)
    options: QuestionOptions = Field(default_factory=QuestionOptions)


class QuestionAccepted(BaseModel):
    id: str
    status_url: str
    events_url: str


class QuestionStatus(BaseModel):
    id: str
    status: Literal["pending", "done", "failed"]
    answer: Answer | None = None
    error: str | None = None


class IndexStart(BaseModel):
    root: str = Field(min_length=1)


class IndexAccepted(BaseModel):
    job_id: str
    status_url: str
    events_url: str


class IndexStatus(BaseModel):
    job_id: str
    status: Literal["running", "done"]
    report: ScanReport | None = None


class Health(BaseModel):
    redis: bool
    queues: dict[str, int]
    status: Literal["ok", "degraded"]
