"""Celery edge of the synthesizer: fan out ``synthesize.map`` as a chord into ``synthesize.reduce``."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from typing import Any

from celery import Task, chord

from services.synthesizer.extractive import extract_facts
from services.synthesizer.llm_map import llm_extract_facts
from services.synthesizer.reduce import ReduceLimits, synthesize_answer
from shared.backends import get_llm
from shared.celery_app import app
from shared.contracts import MapBatch, MapResult, QuestionState
from shared.events import EventStream, fail_question, store_answer
from shared.settings import Settings, get_settings


def map_batches(state: QuestionState, size: int) -> list[MapBatch]:
    return [
        MapBatch(
            question_id=state.question_id,
            question=state.question,
            batch_index=index,
            candidates=state.candidates[start : start + size],
        )
        for index, start in enumerate(range(0, len(state.candidates), size))
    ]


def reduce_limits(settings: Settings) -> ReduceLimits:
    return ReduceLimits(
        max_facts=settings.narrator_max_facts,
        token_budget=settings.narrator_token_budget,
        compress_calls=settings.compress_max_calls,
        max_llm_claims=settings.verify_max_claims,
        self_correct=settings.self_correct,
    )


@app.task(name="synthesize.fan_out", bind=True)
def fan_out(self: Task, payload: dict[str, Any]) -> dict[str, Any]:
    """Replace this task by a chord: one map task per batch, in parallel, then one reduce."""
    state = QuestionState.model_validate(payload)
    batches = map_batches(state, get_settings().map_batch_size)
    EventStream(state.question_id).emit(
        "map", "started", f"{len(batches)} batches of up to {get_settings().map_batch_size} passages"
    )
    reduce_signature = reduce_answer.s(state.to_payload())
    if not batches:
        return reduce_answer(results=[], payload=state.to_payload())
    raise self.replace(chord([map_batch.s(b.to_payload()) for b in batches], reduce_signature))


@app.task(name="synthesize.map")
def map_batch(payload: dict[str, Any]) -> dict[str, Any]:
    batch = MapBatch.model_validate(payload)
    settings = get_settings()
    start = time.perf_counter()
    try:
        llm = get_llm()
        if llm is None:
            result = extract_facts(batch)
        else:
            result = llm_extract_facts(batch, llm, settings.map_passage_chars, settings.map_max_facts)
    except Exception as exc:
        fail_question(batch.question_id, f"map batch {batch.batch_index} failed: {type(exc).__name__}: {exc}")
        raise
    EventStream(batch.question_id).emit(
        "map",
        "progress",
        f"batch {batch.batch_index}: {len(result.facts)} facts from {len(batch.candidates)} passages"
        + (f", {result.skipped_entries} entries skipped" if result.skipped_entries else "")
        + (", fell back to the best snippet" if result.fell_back else ""),
        data={
            "batch": batch.batch_index,
            "facts": len(result.facts),
            "skipped": result.skipped_entries,
            "fell_back": result.fell_back,
            "worker_pid": os.getpid(),
        },
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )
    return result.to_payload()


@app.task(name="synthesize.reduce")
def reduce_answer(results: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
    state = QuestionState.model_validate(payload)
    try:
        with EventStream(state.question_id).stage("reduce") as stage:
            answer, report = synthesize_answer(
                state,
                [MapResult.model_validate(r) for r in results],
                get_llm(),
                reduce_limits(get_settings()),
            )
            supported = sum(v.supported for v in answer.verdicts)
            stage.detail = (
                f"{len(answer.citations)} citations; {supported}/{len(answer.verdicts)} claims supported"
            )
            stage.data = asdict(report)
        answer.timings_ms = {**state.timings_ms, "reduce": stage.elapsed_ms}
        answer.timings_ms["total"] = (time.time() - state.started_at) * 1000
        store_answer(answer)
    except Exception as exc:
        fail_question(state.question_id, f"reduce failed: {type(exc).__name__}: {exc}")
        raise
    return answer.to_payload()
