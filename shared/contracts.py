"""The nouns every Hindsight service shares.

Services talk only through Celery tasks; every payload is one of these models serialised to JSON
(``model.model_dump(mode="json")``) and validated again on the receiving side, so a malformed
payload fails loudly at the boundary instead of deep inside a stage.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from shared.thread_address import checked_perplexity_address


def refuse_bool_and_text(value: object) -> object:
    """A JSON integer (``48`` or ``48.0``), not ``true`` or ``"48"``, which Python would take as one."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON integer")
    return value


JsonInt = Annotated[int, BeforeValidator(refuse_bool_and_text)]
# An exported thread's perplexity.ai address; any other site's is refused (``shared.thread_address``).
ThreadAddress = Annotated[str | None, AfterValidator(checked_perplexity_address)]


class Contract(BaseModel):
    """Base for every cross-service model: unknown fields are errors, not silently kept."""

    model_config = ConfigDict(extra="forbid")

    def to_payload(self) -> dict[str, Any]:
        """The JSON-safe dict a Celery task carries."""
        return self.model_dump(mode="json")


class SourceKind(StrEnum):
    """The file formats the indexer understands."""

    MARKDOWN = "markdown"
    TEXT = "text"
    PDF = "pdf"
    HTML = "html"


# Kinds whose extracted text is Markdown (HTML is converted to it): headings open sections and
# indented blocks are code. The others are plain text.
MARKUP_KINDS = frozenset({SourceKind.MARKDOWN, SourceKind.HTML})


class Document(Contract):
    """One indexed file. ``id`` is stable for a path; ``content_hash`` changes with its bytes."""

    id: str
    source_uri: str
    kind: SourceKind
    title: str
    content_hash: str
    metadata: dict[str, str] = Field(default_factory=dict)


class Chunk(Contract):
    """A span of a document's extracted text, the unit that is embedded, searched and cited.

    ``char_start``/``char_end`` index the document's extracted text, so neighbouring chunks can be
    stitched back together exactly and a citation can point at the very characters it rests on.
    ``body_start`` is where that text starts in the file's own decoded text (``shared.source_text``):
    the length of a Markdown file's front matter, set by the indexer, 0 for every other file.
    ``source_url`` is an exported Perplexity thread's perplexity.ai address (its front matter's
    ``url``), ``None`` for every other file and for rows stored before the field existed.
    ``turn_question`` is, in an exported Perplexity thread, the question of the turn the chunk is in
    (set by the indexer from the thread's layout); ``None`` in any other file, outside a turn, and in
    rows stored before the field existed. Document fields needed for filtering and citing are copied
    in, so no stage re-reads the store or the file to learn them.
    """

    id: str
    document_id: str
    ordinal: int = Field(ge=0)
    text: str
    heading_path: list[str] = Field(default_factory=list)
    page: int | None = None
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    title: str
    source_uri: str
    kind: SourceKind
    space: str | None = None
    document_date: datetime | None = None
    body_start: int = Field(default=0, ge=0)
    source_url: ThreadAddress = None
    turn_question: str | None = None

    @field_validator("body_start", mode="before")
    @classmethod
    def _unknown_body_start_is_zero(cls, value: object) -> object:
        """A row written before ``body_start`` was stored reads as 0 (its store marks it pending)."""
        return 0 if value is None else value

    @model_validator(mode="after")
    def _span_matches_text(self) -> Chunk:
        if self.char_end - self.char_start != len(self.text):
            raise ValueError("chunk span length must equal its text length")
        return self

    def passage(self) -> str:
        """What is embedded and keyword-searched: the title and heading path give the text its
        context, as the reader of the section sees it."""
        return "\n".join([self.title, *self.heading_path, self.text])


class Strategy(StrEnum):
    PRECISE = "precise"
    EXHAUSTIVE = "exhaustive"


class HydeMode(StrEnum):
    OFF = "off"
    FUSION = "fusion"
    SUPPLEMENT = "supplement"


class Plan(Contract):
    """What to search for: the research planner's output."""

    strategy: Strategy = Strategy.PRECISE
    variations: list[str] = Field(min_length=1, max_length=4)
    hard_keywords: list[str] = Field(default_factory=list)
    hyde_passage: str | None = None
    planner: Literal["rules", "llm"] = "rules"
    # A follow-up's own words, when the plan searches for its standalone rewrite (the question's text
    # from the plan stage on), and who rewrote it.
    follow_up: str | None = None
    rewritten_by: Literal["rules", "llm"] | None = None


class SearchFilters(Contract):
    """Restrictions applied inside every retrieval leg."""

    kinds: list[SourceKind] | None = None
    spaces: list[str] | None = None
    path_prefix: str | None = None
    date_from: datetime | None = None
    date_to: datetime | None = None

    @field_validator("date_from", "date_to", mode="before")
    @classmethod
    def _text_or_datetime(cls, value: object) -> object:
        """An ISO 8601 string (or a ``datetime``): a number is not taken as a Unix time."""
        if value is not None and not isinstance(value, str | datetime):
            raise ValueError("a date must be an ISO 8601 string")
        return value

    @field_validator("date_from", "date_to")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        """Dates compare in UTC (a naive one is taken as UTC); one that has no UTC time is refused."""
        if value is None:
            return None
        try:
            return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
        except OverflowError as exc:
            raise ValueError("the date is out of range once converted to UTC") from exc


class Candidate(Contract):
    """A chunk found by retrieval, with how each leg ranked it and what later stages scored."""

    chunk: Chunk
    ranks: dict[str, int] = Field(default_factory=dict)
    scores: dict[str, float] = Field(default_factory=dict)
    fused_score: float = 0.0
    rerank_score: float | None = None
    passage: str | None = None
    passage_start: int | None = None
    # The 1-based line of the file where :attr:`text` starts (Markdown and text files, set by the
    # gateway's search for its callers; ``None`` elsewhere).
    line: int | None = Field(default=None, ge=1)

    @property
    def text(self) -> str:
        """The passage shown to later stages: the expanded context when there is one."""
        return self.passage if self.passage is not None else self.chunk.text

    @property
    def text_start(self) -> int:
        """Where :attr:`text` starts in the document's extracted text."""
        return self.passage_start if self.passage_start is not None else self.chunk.char_start


class Fact(Contract):
    """An atomic statement extracted from one candidate, with the exact quote it rests on."""

    text: str
    chunk_id: str
    quote: str
    quote_start: int = Field(ge=0, description="offset of the quote in the document's text")
    source_title: str
    relevance: float = 0.0
    dates: list[str] = Field(default_factory=list)
    code: list[str] = Field(default_factory=list)


class Citation(Contract):
    """What an ``[n]`` marker in the answer resolves to: the exact characters of a source.

    For Markdown and plain-text files ``char_start``/``char_end`` index the file's own text as loaded
    (decoded by ``shared.source_text``, from its first character, front matter included) and
    ``line``/``column`` (1-based) are where the quote starts, so ``path:line`` opens it in an editor;
    ``verified`` means only that the file holds exactly ``quote`` there now ("quote found in file"), not
    that the quote answers the question: ``rank`` (1 = first among the passages synthesis read) and
    ``rerank_score`` (the cross-encoder's logit, ``None`` when no model scored it) say how relevant the
    passage was judged. For PDF and HTML, whose indexed text is extracted rather than the file's
    characters, they index the extracted text and ``line``/``column`` are ``None``. ``source_url``,
    ``turn_question`` and ``body_start`` are the chunk's: the perplexity.ai address of the thread the
    quote is from, the question of its turn, and where the indexed text starts in the file (after a
    Markdown file's front matter, which no citation shows).
    """

    number: int = Field(ge=1)
    document_id: str
    chunk_id: str
    title: str
    source_uri: str
    page: int | None = None
    char_start: int = Field(ge=0)
    char_end: int = Field(ge=0)
    line: int | None = Field(default=None, ge=1)
    column: int | None = Field(default=None, ge=1)
    quote: str
    verified: bool = False
    source_url: ThreadAddress = Field(default=None, description="the Perplexity thread's address, if any")
    turn_question: str | None = Field(default=None, description="the question of the thread's turn, if any")
    body_start: int = Field(default=0, ge=0, description="where the indexed text starts in the file")
    rank: int | None = Field(default=None, ge=1, description="the passage's rank after reranking")
    rerank_score: float | None = Field(default=None, description="the cross-encoder's logit, if scored")


class Relevance(Contract):
    """How well the passages answer the question, as the pipeline judged it: apart from whether each
    quote is found in its file. ``judge`` is ``cross-encoder`` when a model scored the passages
    (``top_score`` its best logit; ``answerable`` that logit against the model's calibrated cut,
    ``None`` without a cut), ``retrieval`` when none did (the passages keep their fused search order
    and nothing measured how well they answer)."""

    judge: Literal["cross-encoder", "retrieval"]
    model: str | None = None
    top_score: float | None = None
    answerable: bool | None = None


class Verdict(Contract):
    """Whether one cited sentence of the answer is supported by its evidence."""

    sentence: str
    citations: list[int]
    supported: bool
    score: float
    method: Literal["lexical", "llm"]
    action: Literal["kept", "corrected", "removed"] = "kept"


class SourcePreview(Contract):
    title: str
    source_uri: str
    preview: str
    kind: SourceKind | None = None
    space: str | None = None
    document_date: datetime | None = None


class Answer(Contract):
    question_id: str
    question: str
    markdown: str
    citations: list[Citation] = Field(default_factory=list)
    verdicts: list[Verdict] = Field(default_factory=list)
    sources_explored: list[SourcePreview] = Field(default_factory=list)
    mode: Literal["extractive", "llm"] = "extractive"
    relevance: Relevance | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)


EventStatus = Literal["started", "progress", "done", "skipped", "failed"]


class Event(Contract):
    """One line of a question's (or an index job's) progress stream."""

    stream_id: str
    stage: str
    status: EventStatus
    detail: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    elapsed_ms: float = 0.0
    ts: float = Field(default_factory=time.time)


class QuestionOptions(Contract):
    """What a user may ask for besides the question itself."""

    strategy: Strategy | None = None
    hyde_mode: HydeMode | None = None
    filters: SearchFilters = Field(default_factory=SearchFilters)
    k_adjacent: JsonInt = Field(default=0, ge=0, le=3)


class SearchMode(StrEnum):
    """Search without synthesis: by meaning, verbatim, both, or chosen from the query's shape."""

    AUTO = "auto"
    SEMANTIC = "semantic"
    EXACT = "exact"
    HYBRID = "hybrid"


class SearchRequest(Contract):
    """``POST /v1/search`` and the retriever's query task: ranked passages, no answer."""

    query: str = Field(min_length=1, max_length=2000)
    mode: SearchMode = SearchMode.AUTO
    filters: SearchFilters = Field(default_factory=SearchFilters)
    limit: JsonInt = Field(default=20, ge=1, le=100)
    k_adjacent: JsonInt = Field(default=0, ge=0, le=3)


class SearchResponse(Contract):
    """The ranked candidates, the mode that actually ran, and what each leg contributed."""

    query: str
    mode: SearchMode
    resolved_mode: SearchMode
    candidates: list[Candidate] = Field(default_factory=list)
    legs: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    elapsed_ms: float = 0.0


class RerankOutcome(Contract):
    received: int
    kept: int
    threshold: float
    fallback_k: int
    used_fallback: bool
    model: str | None
    top_score: float | None = Field(default=None, description="the best candidate's logit")
    answerable: bool | None = Field(
        default=None,
        description="whether the best logit reaches the model's answerability cut; None: no model "
        "with a calibrated cut scored the candidates",
    )


class RerankerStatus(Contract):
    """What one reranker worker does with the questions it receives, for ``/healthz``."""

    worker: str
    mode: Literal["scoring", "pass-through"]
    model: str | None
    detail: str


MAX_TURNS_READ = 4
MAX_TURN_ANSWER_CHARS = 1200


class Turn(Contract):
    """An earlier turn of a conversation, as the planner reads it: what was asked, what was searched
    for (the standalone question, when the turn was itself a follow-up) and the answer's text."""

    question: str
    searched_for: str | None = None
    answer: str = Field(default="", max_length=MAX_TURN_ANSWER_CHARS)


class Question(Contract):
    """A question as the gateway accepted it: what the first stage (plan) takes.

    Each stage's result is the next stage's input, one type per step of ``shared.topology``'s
    question chain, so what a stage needs is in its signature: ``PlannedQuestion`` always has a plan.
    A follow-up names its ``conversation_id`` and carries the conversation's latest turns (``history``,
    oldest first), which the planner reads to make it a standalone question.
    """

    question_id: str
    question: str
    options: QuestionOptions = Field(default_factory=QuestionOptions)
    conversation_id: str | None = None
    history: list[Turn] = Field(default_factory=list, max_length=MAX_TURNS_READ)
    started_at: float = Field(default_factory=time.time)
    timings_ms: dict[str, float] = Field(default_factory=dict)


class PlannedQuestion(Question):
    """What plan gives and search takes: the question and what to search for."""

    plan: Plan


class SearchedQuestion(PlannedQuestion):
    """What search gives and rerank takes: the fused candidates, cut to the reranker's inputs."""

    candidates: list[Candidate]


class RerankedQuestion(SearchedQuestion):
    """What rerank gives and synthesis takes: the candidates the reranker kept, and how it cut them."""

    rerank: RerankOutcome


class MapBatch(Contract):
    """One map task's input: a slice of the reranked candidates."""

    question_id: str
    question: str
    batch_index: int
    candidates: list[Candidate]
    first_rank: int = Field(default=0, ge=0, description="rank (from 0) of the batch's first candidate")


class MapResult(Contract):
    batch_index: int
    facts: list[Fact]
    skipped_entries: int = 0
    fell_back: bool = False


class IndexRequest(Contract):
    """Index (or re-sync) one folder."""

    job_id: str
    root: str
    # Allow a scan to delete more than half of the root's documents (they really are gone).
    force: bool = False


class IndexFileTask(Contract):
    job_id: str
    root: str
    path: str
    document_id: str
    content_hash: str
    size_bytes: int = 0


class IndexBatch(Contract):
    """Files of one scan indexed together: one embedder call and one store write for all of them."""

    job_id: str
    files: list[IndexFileTask]


class IndexFileResult(Contract):
    """What happened to one file; ``reason`` says why it was skipped or failed."""

    path: str
    status: Literal["indexed", "skipped", "failed"]
    chunks: int = 0
    reason: str | None = None
    attempts: int = 1


class ScanReport(Contract):
    """Counts of one scan: what changed and what happened to it."""

    job_id: str
    root: str
    scanned: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    skipped: int = 0
    chunks: int = 0
    failures: list[IndexFileResult] = Field(default_factory=list)
    skipped_files: list[IndexFileResult] = Field(default_factory=list)
    # The paths whose documents this scan deleted from the index.
    deleted_files: list[str] = Field(default_factory=list)
    elapsed_s: float = 0.0
    # Cancelled (``DELETE /v1/index/{job}``): files indexed before stay indexed, the rest were not tried.
    cancelled: bool = False

    @property
    def scan_failed(self) -> bool:
        """The scan itself failed (the folder could not be read), so no file was even looked at."""
        return self.scanned == 0 and self.failed > 0

    @property
    def nothing_indexed(self) -> bool:
        """The scan failed, or every new or changed file it tried to index failed."""
        return self.scan_failed or (self.failed > 0 and self.failed >= self.new + self.changed)


class IndexProgress(Contract):
    """Where a running index job stands: files and bytes done of the total, the rate and the time left
    (``shared.index_jobs.progress_from`` says how they are measured)."""

    job_id: str
    total: int = 0
    done: int = 0
    total_bytes: int = 0
    done_bytes: int = 0
    failed: int = 0
    chunks: int = 0
    current: str | None = None
    # Of a file too big for one embedder call, while it is embedded: its chunks embedded, of how many.
    current_chunks_done: int = 0
    current_chunks: int = 0
    rate_files_per_s: float = 0.0
    rate_bytes_per_s: float = 0.0
    eta_s: float | None = None
    elapsed_s: float = 0.0


class WatchedRoot(Contract):
    """A folder the watcher re-indexes whenever files under it change."""

    root: str
    registered_at: float = Field(default_factory=time.time)


class ScrapeRequest(Contract):
    """Export the Perplexity library into the export folder, then index what changed."""

    job_id: str
    refetch_all: bool = False


class ExportReport(Contract):
    """Counts of one export (a scrape or an import): what was found and what was written."""

    export_dir: str
    discovered: int = 0
    fetched: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    gone: int = 0
    failed: int = 0
    failures: list[str] = Field(default_factory=list)
    written: list[str] = Field(default_factory=list)
    kept_once: list[str] = Field(
        default_factory=list, description="imported threads found already there (the same thread), by name"
    )

    @property
    def has_changes(self) -> bool:
        return bool(self.new or self.changed)


class ThreadCheck(Contract):
    """One file of the Perplexity export folder, read back (``hindsight library check``)."""

    path: str = Field(description="relative to the export folder")
    title: str = ""
    origin: str = Field(default="unknown", description="scraped, imported, both, or unknown")
    turns: int = 0
    site_turns: int | None = None
    site_complete: bool | None = None
    first_question: str | None = None
    problem: str | None = None

    @property
    def turns_differ(self) -> bool:
        """The file has another number of turns than the site listed, or the site had more pages."""
        return (self.site_turns is not None and self.turns != self.site_turns) or self.site_complete is False


class LibraryCheck(Contract):
    """The Perplexity export folder read back: the scrape worker's ``scrape.library_check`` and
    ``GET /v1/library/perplexity``; ``hindsight library check`` prints it."""

    export_dir: str
    threads: list[ThreadCheck] = Field(default_factory=list)

    @property
    def by_origin(self) -> dict[str, int]:
        return dict(Counter(t.origin for t in self.threads if t.problem is None))

    @property
    def unreadable(self) -> list[ThreadCheck]:
        return [t for t in self.threads if t.problem is not None]

    @property
    def turn_mismatches(self) -> list[ThreadCheck]:
        return [t for t in self.threads if t.problem is None and t.turns_differ]


class ScrapeReport(Contract):
    job_id: str
    export: ExportReport
    index_queued: bool = False
