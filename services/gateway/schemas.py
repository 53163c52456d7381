"""HTTP request and response bodies of the gateway."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path as PathParam
from pydantic import AfterValidator, BaseModel, Field, computed_field

from shared.contracts import Answer, IndexProgress, QuestionOptions, RerankerStatus, ScanReport

# Ids the gateway hands out (hex uuids); anything else of this shape is simply unknown (404).
ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
JobId = Annotated[str, PathParam(pattern=ID_PATTERN)]
QuestionId = Annotated[str, PathParam(pattern=ID_PATTERN)]
# Linux's PATH_MAX: no folder path is longer.
MAX_PATH_CHARS = 4096


def absolute_folder_path(value: str) -> str:
    """A folder path as a request may name it: absolute (``~`` allowed), without NUL bytes."""
    if "\x00" in value:
        raise ValueError("the path contains a NUL byte")
    if not (value.startswith("/") or value.startswith("~")):
        raise ValueError("the path must be absolute")
    return value


# The pattern documents in the schema what ``absolute_folder_path`` checks (with a clearer message).
ABSOLUTE_PATH_PATTERN = "^[/~][^\\x00]*$"
FolderPath = Annotated[
    str,
    Field(min_length=1, max_length=MAX_PATH_CHARS, json_schema_extra={"pattern": ABSOLUTE_PATH_PATTERN}),
    AfterValidator(absolute_folder_path),
]


class ErrorBody(BaseModel):
    """Every error's body: ``detail`` says why, as a sentence or as FastAPI's list of field errors."""

    detail: str | list[dict[str, Any]]


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}


# Each server-sent event: its stage as ``event``, its stream id as ``id``, the Event as JSON ``data``.
SERVER_SENT_EVENT = {
    "type": "object",
    "properties": {
        "event": {"type": "string"},
        "id": {"type": "string"},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}
EVENT_STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"text/event-stream": {"schema": SERVER_SENT_EVENT}},
        "description": "Server-sent events",
    }
}


class QuestionRequest(BaseModel):
    """The length limit is a setting, checked by the route so its 422 can say what the limit is (the
    app writes it into the schema as ``maxLength``)."""

    question: str = Field(min_length=1, pattern=r"\S")
    options: QuestionOptions = Field(default_factory=QuestionOptions)
    # The conversation this question follows up (an id from an earlier ``QuestionAccepted``).
    conversation_id: str | None = Field(default=None, pattern=ID_PATTERN)


class QuestionAccepted(BaseModel):
    id: str
    conversation_id: str
    status_url: str
    events_url: str


class QuestionStatus(BaseModel):
    id: str
    status: Literal["pending", "done", "failed"]
    answer: Answer | None = None
    error: str | None = None


class QuestionSummary(BaseModel):
    """One entry of the question history: ``GET /v1/questions/{id}`` has its answer."""

    id: str
    question: str
    asked_at: float
    status: Literal["pending", "done", "failed"]
    conversation_id: str


class IndexStart(BaseModel):
    root: FolderPath
    # Let the scan delete more than half of the folder's documents (they really are gone).
    force: bool = Field(default=False, strict=True)


class WatchStart(BaseModel):
    root: FolderPath


class IndexAccepted(BaseModel):
    job_id: str
    status_url: str
    events_url: str


class IndexStatus(BaseModel):
    job_id: str
    status: Literal["running", "done", "cancelled", "failed"]
    report: ScanReport | None = None
    progress: IndexProgress | None = None
    error: str | None = None


class Liveness(BaseModel):
    """The gateway answers: all ``/healthz`` tells anyone without a key."""

    status: Literal["ok"] = "ok"


class IndexJobStarted(BaseModel):
    job_id: str
    started_at: float


class LibraryFolder(BaseModel):
    """A folder Hindsight indexed or watches, with its last sync's report (``None`` before one ended)
    and when that sync started."""

    root: str
    watched: bool
    last_report: ScanReport | None = None
    running: bool = False
    synced_at: float | None = None
    # For the Perplexity export folder: threads per space.
    spaces: dict[str, int] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def documents(self) -> int:
        """Files indexed as of the last sync: new, changed and unchanged ones, less those that failed."""
        report = self.last_report
        return max(0, report.new + report.changed + report.unchanged - report.failed) if report else 0


class Health(BaseModel):
    redis: bool
    queues: dict[str, int]
    rerankers: list[RerankerStatus] = []
    status: Literal["ok", "degraded"]


class Evidence(BaseModel):
    """A cited quote with the source text around it (``before`` + ``quote`` + ``after``; a PDF's whole
    page, with ``page``) and, for a text, Markdown or HTML file, the encoding its bytes were decoded
    from; for a thread exported from Perplexity, its perplexity.ai address and the question of the
    turn quoted."""

    number: int
    title: str
    source_uri: str
    page: int | None = None
    line: int | None = None
    quote: str
    before: str = ""
    after: str = ""
    located: bool = False
    # The passage is in the text extracted from a PDF (its whole page) or an HTML file, not the file's.
    extracted: bool = False
    verified: bool = Field(default=False, description="quote found in file (not that it answers)")
    rank: int | None = None
    rerank_score: float | None = None
    thread_url: str | None = None
    turn_question: str | None = None
    encoding: str | None = Field(
        default=None, description="what the file's bytes were decoded from: utf-8 or windows-1252"
    )


class ConversationTurn(QuestionSummary):
    """One question of a conversation with its state: its own answer and citations once done."""

    answer: Answer | None = None
    error: str | None = None


class Conversation(BaseModel):
    """A conversation's turns, oldest first: what its permalink opens."""

    id: str
    turns: list[ConversationTurn]


class NoteRequest(BaseModel):
    """Save a question's answer as a Markdown note in a folder inside the roots."""

    folder: FolderPath


class NoteSaved(BaseModel):
    path: str
