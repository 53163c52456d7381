"""Celery edge of the synthesizer: the fan-out that becomes the map chord (``shared.topology``), each
map batch, and the reduce that stores the answer. The reduce worker also sweeps for stalled map
stages (``stalls``). Like every question task, each skips a cancelled question and ends the
question's stream when it fails (``shared.tasking``)."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from celery import Task
from celery.signals import worker_process_init

from services.synthesizer.reduce import ReduceLimits
from services.synthesizer.stages import map_batch, reduce, split_into_batches
from services.synthesizer.stalls import MapStage, ResumeStalledStages, forget_stage, start_stage, touch_stage
from shared.backends import get_embedder, get_llm
from shared.celery_app import app
from shared.contracts import MapBatch, MapResult, RerankedQuestion
from shared.events import EventStream, redis_client, store_answer
from shared.interfaces import Embedder
from shared.settings import get_settings
from shared.stage_events import MapData, Stage
from shared.tasking import failing_question, skip_if_cancelled
from shared.topology import SYNTHESIZE_FAN_OUT, SYNTHESIZE_MAP, SYNTHESIZE_REDUCE

log = logging.getLogger(__name__)


def map_embedder() -> Embedder | None:
    """The embedder the extractive map scores sentences with; none when an LLM does the map."""
    return get_embedder() if get_settings().generation.llm == "none" else None


@worker_process_init.connect
def _load_models(**_: Any) -> None:
    """A worker process of the extractive mode loads its embedder before its first batch, so the
    first question's map does not spend its time loading it."""
    try:
        map_embedder()
    except Exception:  # the first task reports it to its question; the worker must still start
        log.exception("the synthesizer's models did not load")


@app.task(name=SYNTHESIZE_FAN_OUT, bind=True)
def fan_out(self: Task, payload: dict[str, Any]) -> dict[str, Any]:
    """Replace this task by the map chord: one map task per batch, in parallel, then one reduce."""
    reranked = RerankedQuestion.model_validate(payload)
    skip_if_cancelled(reranked.question_id)
    with failing_question(reranked.question_id, Stage.MAP):
        batch_size = get_settings().synthesis.map_batch_size
        batches = split_into_batches(reranked, batch_size)
        announced = f"{len(batches)} batches of up to {batch_size} passages"
        EventStream(reranked.question_id).emit(Stage.MAP, "started", announced)
        if batches:
            stage = MapStage(question=reranked, reduce_task_id=self.request.id, batch_size=batch_size)
            raise self.replace(start_stage(stage, batches))
    return reduce_answer(results=[], payload=reranked.to_payload())


@app.task(name=SYNTHESIZE_MAP)
def map_task(payload: dict[str, Any]) -> dict[str, Any]:
    batch = MapBatch.model_validate(payload)
    skip_if_cancelled(batch.question_id)
    start = time.perf_counter()
    with failing_question(batch.question_id, f"map batch {batch.batch_index}"):
        result = map_batch(batch, get_llm(), map_embedder(), get_settings().synthesis)
    EventStream(batch.question_id).emit(
        Stage.MAP,
        "progress",
        f"batch {batch.batch_index}: {len(result.facts)} facts from {len(batch.candidates)} passages"
        + (f", {result.skipped_entries} entries skipped" if result.skipped_entries else "")
        + (", fell back to the best snippet" if result.fell_back else ""),
        data=MapData(
            batch=batch.batch_index,
            facts=len(result.facts),
            skipped=result.skipped_entries,
            fell_back=result.fell_back,
            worker_pid=os.getpid(),
        ),
        elapsed_ms=(time.perf_counter() - start) * 1000,
    )
    touch_stage(redis_client(), batch.question_id)
    return result.to_payload()


@app.task(name=SYNTHESIZE_REDUCE)
def reduce_answer(results: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
    reranked = RerankedQuestion.model_validate(payload)
    try:
        skip_if_cancelled(reranked.question_id)
        with failing_question(reranked.question_id, Stage.REDUCE):
            touch_stage(redis_client(), reranked.question_id)
            with EventStream(reranked.question_id).stage(Stage.REDUCE) as report:
                mapped = [MapResult.model_validate(r) for r in results]
                limits = ReduceLimits.from_settings(get_settings().synthesis)
                answer = reduce(reranked, mapped, get_llm(), limits, report)
            answer.timings_ms = {**reranked.timings_ms, Stage.REDUCE: report.elapsed_ms}
            answer.timings_ms["total"] = (time.time() - reranked.started_at) * 1000
            store_answer(answer)
    finally:
        forget_stage(redis_client(), reranked.question_id)
    return answer.to_payload()


app.steps["consumer"].add(ResumeStalledStages)
