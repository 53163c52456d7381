"""The reduce worker's sweep: send again what each map stage without progress for
``question_stall_s`` is missing (see ``stalls`` for why a stage can lose a message)."""

from __future__ import annotations

import logging

import redis
from celery.result import AsyncResult

from services.synthesizer.chord import batch_task_id, chord_id, map_signature, reduce_signature
from services.synthesizer.stages import split_into_batches
from services.synthesizer.stalls import claim_stalled, forget_stage, plan_resume
from shared.celery_app import app
from shared.events import EventStream, redis_client
from shared.settings import Settings, get_settings

log = logging.getLogger(__name__)


def resume_stalled_stages() -> None:
    """One sweep; a broker that cannot be reached is logged, and the next sweep retries."""
    try:
        resume_each_stalled_stage(get_settings())
    except (redis.RedisError, OSError) as exc:
        log.warning("stalled map stages not swept (the next sweep retries): %s", exc)


def resume_each_stalled_stage(settings: Settings) -> None:
    for stage in claim_stalled(redis_client(), settings.question_stall_s, settings.question_stall_check_s):
        question_id = stage.question.question_id
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
            "resume", "done", f"no map progress for {settings.question_stall_s}s: sent {sent} again"
        )
