"""A question answered in one process: the stages of ``shared.topology``'s question chain, in order,
as the plain functions each Celery task runs, without a broker, event streams or JSON between them.

    plan -> search -> rerank -> map (each batch) -> reduce

Each stage takes what the previous one gave (``Question`` -> ``PlannedQuestion`` -> ``SearchedQuestion``
-> ``RerankedQuestion`` -> ``Answer``). The benchmarks compare this path with the services' to
measure what the distribution costs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TypeVar

from services.reranker.service import Reranker
from services.reranker.stages import rerank
from services.retriever.keywords import StoreIdf
from services.retriever.search import Retriever
from services.retriever.stages import build_retriever, plan, search
from services.synthesizer.reduce import ReduceLimits
from services.synthesizer.stages import map_batch, reduce, split_into_batches
from shared.backends import create_embedder, create_llm, create_store
from shared.contracts import Answer, Question
from shared.events import StageReport
from shared.interfaces import LLM, VectorStore
from shared.settings import Settings

T = TypeVar("T")


@dataclass(frozen=True)
class QuestionParts:
    """What the stages run with, built once from the settings as each worker builds its own."""

    settings: Settings
    store: VectorStore
    retriever: Retriever
    reranker: Reranker
    llm: LLM | None

    @classmethod
    def from_settings(cls, settings: Settings) -> QuestionParts:
        embedder = create_embedder(settings)
        store = create_store(settings, embedder)
        llm = create_llm(settings)
        retriever = build_retriever(store, embedder, llm, settings.retrieval)
        return cls(
            settings,
            store,
            retriever,
            Reranker(settings.reranking, settings.reranker_dir, settings.embedding.onnx_threads),
            llm,
        )


def answer(question: Question, parts: QuestionParts, seconds: dict[str, float] | None = None) -> Answer:
    """Every stage of the question chain, in order, in this process; ``seconds``, where given, gets
    each stage's wall-clock seconds by the stage's name (plan, search, rerank, map, reduce)."""
    settings, llm = parts.settings, parts.llm
    clock = _StageClock(seconds)
    planned = clock("plan", plan(question, llm, StoreIdf(parts.store), settings.retrieval, StageReport()))
    searched = clock("search", search(planned, parts.retriever, settings.retrieval, StageReport()))
    reranked = clock("rerank", rerank(searched, parts.reranker, StageReport()))
    batches = split_into_batches(reranked, settings.synthesis.map_batch_size)
    results = clock("map", [map_batch(b, llm, parts.retriever.embedder, settings.synthesis) for b in batches])
    limits = ReduceLimits.from_settings(settings.synthesis)
    return clock("reduce", reduce(reranked, results, llm, limits, StageReport()))


class _StageClock:
    """Called with a stage's name and its result as each stage ends: records the seconds since the
    previous stage ended, and hands the result back."""

    def __init__(self, seconds: dict[str, float] | None) -> None:
        self._seconds, self._since = seconds, time.perf_counter()

    def __call__(self, stage: str, result: T) -> T:
        now = time.perf_counter()
        if self._seconds is not None:
            self._seconds[stage] = now - self._since
        self._since = now
        return result
