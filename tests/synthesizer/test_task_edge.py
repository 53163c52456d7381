"""The synthesizer's tasks on the shared task edge (real Redis, the tasks called in this process): a
cancelled question's map batch and reduce do not run, and the stall sweep drops its stage."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from celery.exceptions import Ignore

from services.synthesizer.stages import split_into_batches
from services.synthesizer.stalls import MapStage, record_stage, resume_each_stalled_stage
from services.synthesizer.tasks import map_task, reduce_answer
from shared.contracts import RerankedQuestion
from shared.events import EventStream
from shared.redis_keys import MAP_STAGES_KEY, cancelled_key, map_stage_key
from shared.settings import get_settings
from testing.sample_candidates import all_chunks, reranked_question


def cancelled_question(client: redis.Redis) -> RerankedQuestion:
    question = reranked_question("What is my sourdough starter called?", all_chunks())
    question = question.model_copy(update={"question_id": uuid.uuid4().hex})
    client.set(cancelled_key(question.question_id), "1", ex=60)
    return question


def test_a_cancelled_questions_map_batch_does_not_run(redis_env: redis.Redis) -> None:
    question = cancelled_question(redis_env)
    [batch, *_] = split_into_batches(question, 4)

    with pytest.raises(Ignore):
        map_task(batch.to_payload())
    assert EventStream(question.question_id, redis_env).read() == []


def test_a_cancelled_questions_reduce_does_not_run_and_forgets_its_map_stage(redis_env: redis.Redis) -> None:
    question = cancelled_question(redis_env)
    record_stage(redis_env, MapStage(question=question, reduce_task_id="r", batch_size=4), ttl_s=60)

    with pytest.raises(Ignore):
        reduce_answer([], question.to_payload())
    assert EventStream(question.question_id, redis_env).read() == []
    assert redis_env.zscore(MAP_STAGES_KEY, question.question_id) is None


def test_the_sweep_drops_a_cancelled_questions_stalled_stage_and_sends_nothing(
    redis_env: redis.Redis,
) -> None:
    question = cancelled_question(redis_env)
    record_stage(redis_env, MapStage(question=question, reduce_task_id="r", batch_size=4), ttl_s=60)
    redis_env.zadd(MAP_STAGES_KEY, {question.question_id: time.time() - 3600}, xx=True)  # stalled an hour

    resume_each_stalled_stage(get_settings().tasks)

    assert redis_env.get(map_stage_key(question.question_id)) is None
    assert EventStream(question.question_id, redis_env).read() == []  # no "resume" event: nothing sent
