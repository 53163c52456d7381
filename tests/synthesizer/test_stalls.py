"""Stalled map stages: which ones a sweep claims, and what it sends again (real Redis)."""

from __future__ import annotations

import time

import pytest
import redis

from services.synthesizer.stalls import (
    MapStage,
    Resume,
    claim_stalled,
    forget_stage,
    plan_resume,
    record_stage,
    touch_stage,
)
from shared.redis_keys import MAP_STAGES_KEY, MAP_SWEEP_LOCK_KEY, map_stage_key
from testing.sample_candidates import reranked_question


@pytest.fixture
def client(redis_url: str) -> redis.Redis:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    return client


def stage(question_id: str) -> MapStage:
    question = reranked_question("why?", []).model_copy(update={"question_id": question_id})
    return MapStage(
        question=question,
        reduce_task_id=f"{question_id}:chain",
        batch_size=10,
    )


def age(client: redis.Redis, question_id: str, seconds: float) -> None:
    client.zadd(MAP_STAGES_KEY, {question_id: time.time() - seconds}, xx=True)


def test_batches_without_an_outcome_are_resent_and_finished_ones_are_not() -> None:
    assert plan_resume(["SUCCESS", "PENDING", "STARTED"]) == Resume(batches=[1, 2], reduce=False)


def test_when_every_batch_succeeded_the_reduce_is_resent() -> None:
    assert plan_resume(["SUCCESS", "SUCCESS"]) == Resume(batches=[], reduce=True)


def test_a_failed_batch_resends_nothing_because_it_already_failed_the_question() -> None:
    assert plan_resume(["SUCCESS", "FAILURE", "PENDING"]) == Resume(batches=[], reduce=False)


def test_only_stages_without_progress_for_the_stall_time_are_claimed(client: redis.Redis) -> None:
    record_stage(client, stage("fresh"), ttl_s=60)
    record_stage(client, stage("stalled"), ttl_s=60)
    age(client, "stalled", 120)

    assert [s.question.question_id for s in claim_stalled(client, stall_s=60, lock_s=1)] == ["stalled"]


def test_progress_restarts_the_stall_clock(client: redis.Redis) -> None:
    record_stage(client, stage("q"), ttl_s=60)
    age(client, "q", 120)
    touch_stage(client, "q")

    assert claim_stalled(client, stall_s=60, lock_s=1) == []


def test_a_claimed_stage_is_not_claimed_again_until_it_stalls_again(client: redis.Redis) -> None:
    record_stage(client, stage("q"), ttl_s=60)
    age(client, "q", 120)
    assert len(claim_stalled(client, stall_s=60, lock_s=1)) == 1
    client.delete(MAP_SWEEP_LOCK_KEY)

    assert claim_stalled(client, stall_s=60, lock_s=1) == []


def test_a_second_worker_sweeping_at_the_same_time_claims_nothing(client: redis.Redis) -> None:
    record_stage(client, stage("q"), ttl_s=60)
    age(client, "q", 120)
    client.set(MAP_SWEEP_LOCK_KEY, "1", ex=10)

    assert claim_stalled(client, stall_s=60, lock_s=1) == []


def test_a_stage_whose_record_expired_is_dropped(client: redis.Redis) -> None:
    record_stage(client, stage("q"), ttl_s=60)
    age(client, "q", 120)
    client.delete(map_stage_key("q"))

    assert claim_stalled(client, stall_s=60, lock_s=1) == []
    assert client.zscore(MAP_STAGES_KEY, "q") is None


def test_touching_a_forgotten_stage_does_not_bring_it_back(client: redis.Redis) -> None:
    record_stage(client, stage("q"), ttl_s=60)
    forget_stage(client, "q")
    touch_stage(client, "q")

    assert client.zscore(MAP_STAGES_KEY, "q") is None and client.get(map_stage_key("q")) is None
