"""Finish a question whose map stage lost a message.

Redis hands a killed worker's unacknowledged messages to another after the visibility timeout, but
that covers only what kombu had recorded as unacknowledged. A message the worker had already popped
(its ``BRPOP`` reply read or waiting in the socket) and not yet recorded is gone with the worker, and
a chord missing one part never calls its reduce: the question would wait for ever.

So ``fan_out`` records each map stage here, every finished batch keeps it fresh, and the reduce
worker sweeps for stages with no progress for ``question_stall_s`` (``stall_sweep``). For one, it
sends again the batches the result backend holds no outcome for, under their own task ids and into
the same chord (``chord``); when every batch succeeded, the chord's reduce was the lost message, and
it sends that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

import redis

from shared.contracts import Contract, RerankedQuestion

STAGES_KEY = "hindsight:map-stages"
SWEEP_LOCK_KEY = "hindsight:map-stages:sweep"
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


def stage_key(question_id: str) -> str:
    return f"hindsight:map-stage:{question_id}"


def record_stage(client: redis.Redis, stage: MapStage, ttl_s: int) -> None:
    question_id = stage.question.question_id
    pipe = client.pipeline()
    pipe.set(stage_key(question_id), stage.model_dump_json(), ex=ttl_s)
    pipe.zadd(STAGES_KEY, {question_id: time.time()})
    pipe.execute()


def touch_stage(client: redis.Redis, question_id: str) -> None:
    """The stage made progress: its stall clock starts again (a stage already forgotten stays so)."""
    client.zadd(STAGES_KEY, {question_id: time.time()}, xx=True)


def forget_stage(client: redis.Redis, question_id: str) -> None:
    pipe = client.pipeline()
    pipe.zrem(STAGES_KEY, question_id)
    pipe.delete(stage_key(question_id))
    pipe.execute()


def claim_stalled(client: redis.Redis, stall_s: float, lock_s: float) -> list[MapStage]:
    """The stages with no progress for ``stall_s``, for one sweeping worker at a time.

    Each one's clock restarts as it is claimed, so a stage is resumed at most once per ``stall_s``.
    A stage whose record expired is dropped. ``client`` decodes replies (``redis_client()``).
    """
    if not client.set(SWEEP_LOCK_KEY, "1", nx=True, ex=max(1, int(lock_s))):
        return []
    now = time.time()
    stalled: list[MapStage] = []
    for question_id in cast(list[str], client.zrangebyscore(STAGES_KEY, "-inf", now - stall_s)):
        raw = cast(str | None, client.get(stage_key(question_id)))
        if raw is None:
            client.zrem(STAGES_KEY, question_id)
            continue
        client.zadd(STAGES_KEY, {question_id: now}, xx=True)
        stalled.append(MapStage.model_validate_json(raw))
    return stalled


def plan_resume(states: list[str]) -> Resume:
    """Given each batch's result state in order: the batches to send again, or the reduce.

    A failed batch has already failed the question, so nothing is sent.
    """
    if any(state in FINISHED_STATES - {"SUCCESS"} for state in states):
        return Resume(batches=[], reduce=False)
    missing = [index for index, state in enumerate(states) if state not in FINISHED_STATES]
    return Resume(batches=missing, reduce=not missing)
