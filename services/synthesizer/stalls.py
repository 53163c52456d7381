"""The map chord, and finishing a question whose map stage lost a message.

A question's map stage is a chord: one map task per batch, in parallel, then the reduce. Redis hands
a killed worker's unacknowledged messages to another after the visibility timeout, but that covers
only what kombu had recorded as unacknowledged. A message the worker had already popped (its
``BRPOP`` reply read or waiting in the socket) and not yet recorded is gone with the worker, and a
chord missing one part never calls its reduce: the question would wait for ever.

So ``fan_out`` records each map stage here, every finished batch keeps it fresh, and the reduce
worker sweeps (:class:`ResumeStalledStages`) for stages with no progress for ``question_stall_s``.
For one, it sends again the batches the result backend holds no outcome for, under their own task
ids and into the same chord; when every batch succeeded, the chord's reduce was the lost message,
and it sends that. A cancelled question's stage is dropped, nothing sent.

Celery's chord join counts a header task id once: each batch runs under ``<question>:map:<index>``
and the chord's group under ``<question>:map``, so a batch that was only slow and is sent again is
not counted twice.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, cast

import redis
from celery import Signature, bootsteps, chord, group
from celery.result import AsyncResult

from services.synthesizer.stages import split_into_batches
from shared.celery_app import app
from shared.contracts import Contract, MapBatch, RerankedQuestion
from shared.events import EventStream, redis_client
from shared.redis_keys import (
    MAP_STAGES_KEY,
    MAP_SWEEP_LOCK_KEY,
    MAP_SWEEP_LOCK_LIFETIME,
    map_stage_key,
)
from shared.settings import TaskSettings, get_settings
from shared.stage_events import Stage
from shared.tasking import is_cancelled
from shared.topology import MAP_CHORD, TASK_QUEUES

log = logging.getLogger(__name__)

# Celery's result states that end a task; anything else (pending, started, retried) may be lost.
FINISHED_STATES = frozenset({"SUCCESS", "FAILURE", "REVOKED"})


class MapStage(Contract):
    """What sending a question's map batches or its reduce again needs."""

    question: RerankedQuestion
    reduce_task_id: str
    # The size fan_out split by, so the batches are rebuilt as they were whatever the settings say now.
    batch_size: int


@dataclass(frozen=True)
class Resume:
    """What to send again for a stalled stage: the missing batches, or else the reduce."""

    batches: list[int]
    reduce: bool


# The chord, under fixed ids.


def chord_id(question_id: str) -> str:
    """The map chord's group id, fixed so that a batch sent again joins the same chord."""
    return f"{question_id}:map"


def batch_task_id(question_id: str, index: int) -> str:
    return f"{question_id}:map:{index}"


def map_signature(question_id: str, batch: MapBatch) -> Signature:
    """A map task under its fixed id, so a batch sent again counts once in the chord."""
    signature = app.signature(MAP_CHORD.header, args=[batch.to_payload()])
    return signature.set(task_id=batch_task_id(question_id, batch.batch_index))


def reduce_signature(stage: MapStage) -> Signature:
    """The chord's reduce, under the id of the task the chord replaced."""
    return app.signature(MAP_CHORD.body, args=[stage.question.to_payload()]).set(task_id=stage.reduce_task_id)


def map_chord(stage: MapStage, batches: list[MapBatch]) -> Signature:
    """One map task per batch, in parallel, then the reduce; the chord's id is fixed."""
    question_id = stage.question.question_id
    maps = chord([map_signature(question_id, b) for b in batches], reduce_signature(stage))
    # chord() unwraps its header into bare tasks and would draw a random group id; the header as a
    # group with its own id fixes the chord's id, so a batch sent again joins this chord.
    maps.tasks = group(maps.tasks, task_id=chord_id(question_id))
    return maps


# The stages in flight, by their last progress.


def record_stage(client: redis.Redis, stage: MapStage, ttl_s: int) -> None:
    question_id = stage.question.question_id
    pipe = client.pipeline()
    pipe.set(map_stage_key(question_id), stage.model_dump_json(), ex=ttl_s)
    pipe.zadd(MAP_STAGES_KEY, {question_id: time.time()})
    pipe.execute()


def start_stage(stage: MapStage, batches: list[MapBatch]) -> Signature:
    """Record the stage, to be swept if it stalls; the chord that runs it."""
    record_stage(redis_client(), stage, map_stage_key.lifetime.ttl_s(get_settings().tasks))
    return map_chord(stage, batches)


def touch_stage(client: redis.Redis, question_id: str) -> None:
    """The stage made progress: its stall clock starts again (a stage already forgotten stays so)."""
    client.zadd(MAP_STAGES_KEY, {question_id: time.time()}, xx=True)


def forget_stage(client: redis.Redis, question_id: str) -> None:
    pipe = client.pipeline()
    pipe.zrem(MAP_STAGES_KEY, question_id)
    pipe.delete(map_stage_key(question_id))
    pipe.execute()


def claim_stalled(client: redis.Redis, stall_s: float, lock_s: int) -> list[MapStage]:
    """The stages with no progress for ``stall_s``, for one sweeping worker at a time (who holds the
    sweep's lock for ``lock_s``).

    Each one's clock restarts as it is claimed, so a stage is resumed at most once per ``stall_s``.
    A stage whose record expired is dropped. ``client`` decodes replies (``redis_client()``).
    """
    if not client.set(MAP_SWEEP_LOCK_KEY, "1", nx=True, ex=lock_s):
        return []
    now = time.time()
    stalled: list[MapStage] = []
    for question_id in cast(list[str], client.zrangebyscore(MAP_STAGES_KEY, "-inf", now - stall_s)):
        raw = cast(str | None, client.get(map_stage_key(question_id)))
        if raw is None:
            client.zrem(MAP_STAGES_KEY, question_id)
            continue
        client.zadd(MAP_STAGES_KEY, {question_id: now}, xx=True)
        stalled.append(MapStage.model_validate_json(raw))
    return stalled


# Resuming a stalled stage.


def plan_resume(states: list[str]) -> Resume:
    """Given each batch's result state in order: the batches to send again, or the reduce.

    A failed batch has already failed the question, so nothing is sent.
    """
    if any(state in FINISHED_STATES - {"SUCCESS"} for state in states):
        return Resume(batches=[], reduce=False)
    missing = [index for index, state in enumerate(states) if state not in FINISHED_STATES]
    return Resume(batches=missing, reduce=not missing)


def resume_stalled_stages() -> None:
    """One sweep; a broker that cannot be reached is logged, and the next sweep retries."""
    try:
        resume_each_stalled_stage(get_settings().tasks)
    except (redis.RedisError, OSError) as exc:
        log.warning("stalled map stages not swept (the next sweep retries): %s", exc)


def resume_each_stalled_stage(settings: TaskSettings) -> None:
    lock_s = MAP_SWEEP_LOCK_LIFETIME.ttl_s(settings)
    for stage in claim_stalled(redis_client(), settings.question_stall_s, lock_s):
        question_id = stage.question.question_id
        if is_cancelled(question_id):  # its tasks skip themselves: nothing to wait for
            forget_stage(redis_client(), question_id)
            continue
        batches = split_into_batches(stage.question, stage.batch_size)
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
            Stage.RESUME, "done", f"no map progress for {settings.question_stall_s}s: sent {sent} again"
        )


class ResumeStalledStages(bootsteps.StartStopStep):
    """A Celery consumer step: every ``question_stall_check_s``, a worker that consumes the reduce's
    queue sweeps for stalled map stages."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.sweeps: Any = None

    def start(self, parent: Any) -> None:
        if TASK_QUEUES[MAP_CHORD.body] in parent.app.amqp.queues.consume_from:
            interval_s = get_settings().tasks.question_stall_check_s
            self.sweeps = parent.timer.call_repeatedly(interval_s, resume_stalled_stages)

    def stop(self, parent: Any) -> None:
        """The consumer restarts after a lost connection and starts its steps again: one timer at a time."""
        if self.sweeps is not None:
            self.sweeps.cancel()
            self.sweeps = None
