"""The event vocabulary: every stage a question's or a job's events name, and the data each reports.

A question runs its stages in the order of ``shared.topology``'s chain (:data:`QUESTION_STAGES` maps
each task to the stage it reports as); an index or scrape job's stream has stages of its own. Each
stage's ``done`` (or ``progress``) event carries the data model :data:`STAGE_DATA` names for it, and
:func:`stage_data` reads it back typed. The gateway publishes :func:`event_schema` for the page,
which takes its stage names and labels from it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, get_args

from pydantic import BaseModel

from shared.contracts import (
    Answer,
    Contract,
    Event,
    EventStatus,
    IndexFileResult,
    IndexProgress,
    Plan,
    RerankOutcome,
    ScanReport,
)
from shared.topology import (
    MAP_CHORD,
    RERANK_SCORE,
    RETRIEVE_PLAN,
    RETRIEVE_SEARCH,
    SYNTHESIZE_FAN_OUT,
)


class Stage(StrEnum):
    """The stages events name: a question's in the order it runs them, then an index or scrape job's."""

    WAITING = "waiting"  # the gateway's, never stored: the question waits on a queue with no live worker
    PLAN = "plan"
    SEARCH = "search"
    RERANK = "rerank"
    MAP = "map"
    RESUME = "resume"  # the stall sweep sent lost map work again
    REDUCE = "reduce"
    ANSWER = "answer"  # the question's last event: its answer, or why there is none
    SCRAPE = "scrape"
    SCAN = "scan"
    PROGRESS = "progress"
    DOCUMENT = "document"
    INDEX = "index"  # the index job's last event: its report


# The stage each task of a question reports as, in the chain's order.
QUESTION_STAGES: dict[str, Stage] = {
    RETRIEVE_PLAN: Stage.PLAN,
    RETRIEVE_SEARCH: Stage.SEARCH,
    RERANK_SCORE: Stage.RERANK,
    SYNTHESIZE_FAN_OUT: Stage.MAP,
    MAP_CHORD.header: Stage.MAP,
    MAP_CHORD.body: Stage.REDUCE,
}

# What a reader shows while a stage runs; a stage without one shows its name.
STAGE_LABELS: dict[Stage, str] = {
    Stage.WAITING: "waiting for a worker",
    Stage.PLAN: "understanding the question",
    Stage.SEARCH: "searching your notes",
    Stage.RERANK: "ranking the passages",
    Stage.MAP: "reading the passages",
    Stage.REDUCE: "writing the answer",
}


def stage_label(stage: str) -> str:
    """What a reader shows while ``stage`` runs (a stage name from an event)."""
    return STAGE_LABELS.get(Stage(stage), stage) if stage in set(Stage) else stage


class PlanData(Contract):
    """The plan stage: what it will search for, and why the rules planned it if the LLM did not."""

    plan: Plan
    fallback_reason: str | None = None
    searched_for: str  # the question searched: a follow-up's standalone rewrite, else as asked


class HydeData(Contract):
    ran: bool
    reason: str


class SearchData(Contract):
    """The search stage: how many hits each leg found, how they were fused, how many candidates."""

    legs: dict[str, int]
    hyde: HydeData
    fusion: str
    notes: list[str]
    candidates: int


class MapData(Contract):
    """One map batch done (a ``progress`` event of the map stage)."""

    batch: int
    facts: int
    skipped: int
    fell_back: bool
    worker_pid: int


class ReduceData(Contract):
    """What the reduce did besides the answer."""

    skipped_entries: int
    fallback_batches: int
    dropped_sentences: int
    removed_claims: int
    corrected_claims: int


class AnswerData(Contract):
    """The question's answer, on its last event."""

    answer: Answer


class DocumentData(Contract):
    """One file of an index job: its result and the job's progress, or the files of a batch retried."""

    result: IndexFileResult | None = None
    progress: IndexProgress | None = None
    paths: list[str] | None = None

    def to_payload(self) -> dict[str, Any]:
        """Only the fields the event has (``"result" in data`` tells a file's event from a retry's)."""
        return self.model_dump(mode="json", exclude={name for name, value in self if value is None})


# The data each stage's events carry; a stage not named here carries none, or (the scrape stage)
# the scraper's counts, which no reader types.
STAGE_DATA: dict[Stage, type[Contract]] = {
    Stage.PLAN: PlanData,
    Stage.SEARCH: SearchData,
    Stage.RERANK: RerankOutcome,
    Stage.MAP: MapData,
    Stage.REDUCE: ReduceData,
    Stage.ANSWER: AnswerData,
    Stage.SCAN: ScanReport,
    Stage.PROGRESS: IndexProgress,
    Stage.DOCUMENT: DocumentData,
    Stage.INDEX: ScanReport,
}


class StageDataMismatchError(TypeError):
    """An event's data is not the model its stage declares."""


def checked_data(stage: Stage, data: Contract | dict[str, Any] | None) -> dict[str, Any]:
    """``data`` as the event carries it, once checked against the stage's model (raises
    :class:`StageDataMismatchError`, or pydantic's ``ValidationError`` for a dict that does not fit)."""
    if data is None:
        return {}
    model = STAGE_DATA.get(stage)
    if model is None:
        if isinstance(data, Contract):
            raise StageDataMismatchError(f"the {stage} stage carries no {type(data).__name__}")
        return data
    if isinstance(data, dict):
        data = model.model_validate(data)
    if type(data) is not model:
        raise StageDataMismatchError(
            f"the {stage} stage carries a {model.__name__}, not a {type(data).__name__}"
        )
    return data.to_payload()


def stage_data(stage: Stage, data: dict[str, Any]) -> Contract | None:
    """An event's data read back as its stage's model (``None`` for a stage that declares none)."""
    model = STAGE_DATA.get(stage)
    return model.model_validate(data) if model is not None else None


def carried_answer(event: Event) -> Answer:
    """The answer a question's last event (the answer stage, ``done``) carries."""
    return AnswerData.model_validate(event.data).answer


def search_data(event: Event) -> SearchData | None:
    """What a search stage's ``done`` event tells (``None`` for its other events)."""
    return SearchData.model_validate(event.data) if event.stage == Stage.SEARCH and event.data else None


class StageSchema(BaseModel):
    name: str
    label: str
    data: dict[str, Any] | None  # the JSON schema of the stage's data, if it declares a model


class EventSchema(BaseModel):
    """What the gateway publishes: each stage by its enum name, with its label and data's schema."""

    stages: dict[str, StageSchema]
    statuses: list[str]


def event_schema() -> EventSchema:
    return EventSchema(
        stages={
            stage.name: StageSchema(
                name=stage.value,
                label=stage_label(stage),
                data=STAGE_DATA[stage].model_json_schema() if stage in STAGE_DATA else None,
            )
            for stage in Stage
        },
        statuses=list(get_args(EventStatus)),
    )
