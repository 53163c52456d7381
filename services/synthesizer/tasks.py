"""Celery edge of the synthesizer: fan out ``synthesize.map`` as a chord into ``synthesize.reduce``,
and, in the reduce worker, resume map stages that lost a message (``stalls``)."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict
from typing import Any

import redis
from celery import Task, bootsteps, chord, group
from celery.result import AsyncResult

from services.synthesizer.extractive import extract_facts
from services.synthesizer.llm_map import llm_extract_facts
from services.synthesizer.reduce import ReduceLimits, synthesize_answer
from services.synthesizer.stalls import (
    MapStage,
    batch_task_id,
    chord_id,
    claim_stalled,
    forget_stage,
    plan_resume,
    record_stage,
    touch_stage,
)
from shared.backends import get_llm
from shared.celery_app import app
from shared.contracts import MapBatch, MapResult, QuestionState
from shared.events import EventStream, fail_question, redis_client, store_answer
from shared.settings import Settings, get_settings
from shared.topology import SYNTHESIZE_FAN_OUT, SYNTHESIZE_MAP, SYNTHESIZE_REDUCE, Queue

log = logging.getLogger(__name__)


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


@app.task(name=SYNTHESIZE_FAN_OUT, bind=True)
def fan_out(self: Task, payload: dict[str, Any]) -> dict[str, Any]:
    """Replace this task by a chord: one map task per batch, in parallel, then one reduce."""
    state = QuestionState.model_validate(payload)
    batch_size = get_settings().map_batch_size
    batches = map_batches(state, batch_size)
    announced = f"{len(batches)} batches of up to {batch_size} passages"
    EventStream(state.question_id).emit("map", "started", announced)
    if not batches:
        return reduce_answer(results=[], payload=state.to_payload())
    stage = MapStage(state=state, reduce_task_id=self.request.id, batch_size=batch_size)
    record_stage(redis_client(), stage, get_settings().event_ttl_s)
    maps = chord([map_signature(state.question_id, b) for b in batches], reduce_signature(stage))
    # chord() unwraps its header into bare tasks and would draw a random group id; the header as a
    # group with its own id fixes the chord's id, so a batch sent again joins this chord.
    maps.tasks = group(maps.tasks, task_id=chord_id(state.question_id))
    raise self.replace(maps)


def map_signature(question_id: str, batch: MapBatch) -> Any:
    """A map task under its fixed id, so a batch sent again counts once in the chord."""
    return map_batch.s(batch.to_payload()).set(task_id=batch_task_id(question_id, batch.batch_index))


def reduce_signature(stage: MapStage) -> Any:
    return reduce_answer.s(stage.state.to_payload()).set(task_id=stage.reduce_task_id)


@app.task(name=SYNTHESIZE_MAP)
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
    touch_stage(redis_client(), batch.question_id)
    return result.to_payload()


@app.task(name=SYNTHESIZE_REDUCE)
def reduce_answer(results: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
    state = QuestionState.model_validate(payload)
    touch_stage(redis_client(), state.question_id)
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
    finally:
        forget_stage(redis_client(), state.question_id)
    return answer.to_payload()


def resume_stalled_stages() -> None:
    """Send again what each map stage without progress for ``question_stall_s`` is missing."""
    try:
        resume_each_stalled_stage(get_settings())
    except (redis.RedisError, OSError) as exc:
        log.warning("stalled map stages not swept (the next sweep retries): %s", exc)


def resume_each_stalled_stage(settings: Settings) -> None:
    for stage in claim_stalled(redis_client(), settings.question_stall_s, settings.question_stall_check_s):
        question_id = stage.state.question_id
        batches = map_batches(stage.state, stage.batch_size)
        outcomes = [AsyncResult(batch_task_id(question_id, b.batch_index), app=app) for b in batches]
        resume = plan_resume([outcome.state for outcome in outcomes])
        for index in resume.batches:
            map_signature(question_id, batches[index]).apply_async(
                group_id=chord_id(question_id), group_index=index, chord=reduce_signature(stage)
            )
        if resume.reduce:
            # Every outcome read above was a success, which AsyncResult keeps: no second read.
            reduce_signature(stage).apply_async(args=[[outcome.result for outcome in outcomes]])
        if not (resume.batches or resume.reduce):
            forget_stage(redis_client(), question_id)
            continue
        sent = f"batches {resume.batches}" if resume.batches else "the reduce"
        EventStream(question_id).emit(
            "resume", "done", f"no map progress for {settings.question_stall_s}s: sent {sent} again"
        )


class ResumeStalledStages(bootsteps.StartStopStep):
    """In a worker that serves the reduce queue: sweep for stalled map stages every few seconds."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.sweeps: Any = None

    def start(self, parent: Any) -> None:
        if Queue.REDUCE in parent.app.amqp.queues.consume_from:
            interval_s = get_settings().question_stall_check_s
            self.sweeps = parent.timer.call_repeatedly(interval_s, resume_stalled_stages)

    def stop(self, parent: Any) -> None:
        """The consumer restarts after a lost connection and starts its steps again: one timer at a time."""
        if self.sweeps is not None:
            self.sweeps.cancel()
            self.sweeps = None


app.steps["consumer"].add(ResumeStalledStages)
