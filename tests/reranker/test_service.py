"""Threshold, fallback, micro-batching and pass-through of the reranker, on the real stand-in model."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from provisioning.calibration import FIT_PAIRS, FIT_TEXTS
from services.reranker.batcher import MicroBatcher
from services.reranker.cross_encoder import CrossEncoder
from services.reranker.cutoff import describe
from services.reranker.service import Reranker
from shared.settings import RerankingSettings
from tests.reranker.conftest import candidates, passages

SENTENCES = FIT_TEXTS
QUESTIONS = [question for question, _ in FIT_PAIRS]


def reranker_for(model_dir: Path, **overrides: Any) -> Reranker:
    """A reranker over the model in ``model_dir`` with the reranking settings ``overrides``."""
    return Reranker(RerankingSettings(**overrides), model_dir, onnx_threads=1)


def test_keeps_logits_at_or_above_threshold_by_descending_logit(standin_dir: Path) -> None:
    reranker = reranker_for(standin_dir)
    pool = candidates(SENTENCES)
    kept, outcome = reranker.rerank("How does TCP guarantee delivery?", pool)
    logits = reranker.encoder.score("How does TCP guarantee delivery?", SENTENCES)  # type: ignore[union-attr]
    passing = sorted((i for i in range(len(pool)) if logits[i] >= -5.0), key=lambda i: -logits[i])
    assert passing and len(passing) < len(pool), "the stand-in's logits straddle -5.0 here"
    assert [c.chunk.id for c in kept] == [pool[i].chunk.id for i in passing]
    assert [c.rerank_score for c in kept] == [float(logits[i]) for i in passing]
    assert not outcome.used_fallback
    assert describe(outcome) == f"Reranked {len(pool)} -> {len(passing)} (threshold -5.0, fallback to top-20)"


def test_falls_back_to_fused_top_20_when_nothing_passes(standin_dir: Path) -> None:
    reranker = reranker_for(standin_dir, rerank_threshold=50.0)
    pool = candidates(passages(35))
    kept, outcome = reranker.rerank("What is photosynthesis?", pool)
    assert [c.chunk.id for c in kept] == [c.chunk.id for c in pool[:20]]
    assert all(c.rerank_score is not None for c in kept)
    assert outcome.used_fallback and (outcome.received, outcome.kept) == (35, 20)
    assert describe(outcome).startswith("Reranked 35 -> 20 (threshold 50.0, fallback to top-20)")


def test_a_best_logit_under_the_answerability_cut_says_no_passage_answers(standin_dir: Path) -> None:
    question = "How does TCP guarantee delivery?"
    refusing = reranker_for(standin_dir, rerank_answerable_logit=50.0)
    _, refused = refusing.rerank(question, candidates(SENTENCES))
    best = float(refusing.encoder.score(question, SENTENCES).max())  # type: ignore[union-attr]
    assert refused.answerable is False and refused.top_score == pytest.approx(best)
    assert describe(refused).endswith(f"no passage answers (best {best:.2f})")

    _, answered = reranker_for(standin_dir, rerank_answerable_logit=best).rerank(
        question, candidates(SENTENCES)
    )
    assert answered.answerable is True


def test_a_model_without_a_calibrated_cut_never_refuses(standin_dir: Path) -> None:
    _, outcome = reranker_for(standin_dir).rerank("What is photosynthesis?", candidates(passages(35)))
    assert outcome.answerable is None and outcome.top_score is not None


def test_the_provisioned_models_own_cuts_apply_unless_settings_override_them(
    standin_dir: Path, tmp_path: Path
) -> None:
    calibrated = tmp_path / "calibrated"
    shutil.copytree(standin_dir, calibrated)
    provenance = calibrated / "provenance.json"
    record = json.loads(provenance.read_text())
    provenance.write_text(json.dumps({**record, "keep_logit": 1.5, "answerable_logit": 2.5}))

    own = reranker_for(calibrated)
    overridden = reranker_for(calibrated, rerank_threshold=-1.0, rerank_answerable_logit=0.0)

    assert (own.threshold, own.answerable_logit) == (1.5, 2.5)
    assert (overridden.threshold, overridden.answerable_logit) == (-1.0, 0.0)


def test_passes_fused_order_through_without_a_model(tmp_path: Path) -> None:
    reranker = reranker_for(tmp_path / "nothing-here")
    pool = candidates(passages(35))
    kept, outcome = reranker.rerank("What is photosynthesis?", pool)
    assert kept == pool
    assert outcome.model is None and outcome.kept == 35
    assert reranker.status.mode == "pass-through"
    assert "hindsight models pull" in reranker.status.detail
    assert describe(outcome) == "Reranker has no model: passing 35 candidates through in fused order"


def test_auto_serves_the_verified_precision_that_provisioning_measured_fastest(standin_dir: Path) -> None:
    report = json.loads((standin_dir / "provenance.json").read_text())
    assert report["int8_verified"] and set(report["pairs_per_s"]) == {"fp32", "int8"}
    fastest = max(report["pairs_per_s"], key=report["pairs_per_s"].get)
    assert report["served_precision"] == fastest
    reranker = reranker_for(standin_dir)
    assert reranker.encoder is not None and reranker.encoder.precision == fastest
    assert f"[{fastest}" in reranker.encoder.name and reranker.status.mode == "scoring"


def test_refused_int8_is_never_served_and_auto_falls_back_to_exact_fp32(
    standin_dir: Path, tmp_path: Path
) -> None:
    """Where provisioning refused int8 (no int8 file), asking for int8 passes through; auto serves fp32."""
    for name in ("model_fp32.onnx", "tokenizer.json"):
        (tmp_path / name).symlink_to(standin_dir / name)
    refused = reranker_for(tmp_path, reranker_precision="int8")
    assert refused.encoder is None and refused.status.mode == "pass-through"
    auto = reranker_for(tmp_path)
    assert auto.encoder is not None and auto.encoder.precision == "fp32"


@pytest.mark.parametrize(
    ("precision", "threads", "in_flight"), [("fp32", 1, 1), ("int8", 1, 1), ("int8", 2, 2)]
)
def test_micro_batched_scores_equal_each_question_scored_alone(
    standin_dir: Path, precision: str, threads: int, in_flight: int
) -> None:
    """Five questions share three padded batches; each gets exactly what it gets scored alone,
    also with two batches in flight on two cores."""
    encoder = CrossEncoder(standin_dir, threads=threads, precision=precision, pairs_per_run=64)  # type: ignore[arg-type]
    sizes = [35, 60, 7, 35, 1]
    work = [(QUESTIONS[i], passages(n, seed=i)) for i, n in enumerate(sizes)]
    alone = [encoder.score(question, texts) for question, texts in work]
    batcher = MicroBatcher(encoder.score_pairs, batch_size=64, max_wait_s=0.5, batches_in_flight=in_flight)
    results: dict[int, np.ndarray] = {}
    start = threading.Barrier(len(work))

    def ask(slot: int) -> None:
        start.wait()
        results[slot] = batcher.score(*work[slot])

    threads = [threading.Thread(target=ask, args=(slot,)) for slot in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert batcher.batches_scored == 3, "138 pairs from five questions share ceil(138 / 64) batches"
    for slot, expected in enumerate(alone):
        np.testing.assert_array_equal(results[slot], expected)


def test_with_two_batches_in_flight_the_next_batch_is_scored_while_one_is_still_running() -> None:
    second_started = threading.Event()

    def score_pairs(pairs: list[tuple[str, str]]) -> np.ndarray:
        if pairs[0][1] == "first":
            assert second_started.wait(timeout=10), "the next batch waited for this one to finish"
        else:
            second_started.set()
        return np.full(len(pairs), 1.0 if pairs[0][1] == "first" else 2.0, dtype=np.float32)

    batcher = MicroBatcher(score_pairs, batch_size=2, max_wait_s=0.0, batches_in_flight=2)
    first = batcher.submit([("q", "first"), ("q", "first")])
    second = batcher.submit([("q", "second"), ("q", "second")])
    np.testing.assert_array_equal(second.result(timeout=10), [2.0, 2.0])
    np.testing.assert_array_equal(first.result(timeout=10), [1.0, 1.0])


def test_a_failing_batch_fails_its_questions_and_the_batcher_survives() -> None:
    calls: list[int] = []

    def score_pairs(pairs: list[tuple[str, str]]) -> np.ndarray:
        calls.append(len(pairs))
        if len(calls) == 1:
            raise RuntimeError("session exploded")
        return np.arange(len(pairs), dtype=np.float32)

    batcher = MicroBatcher(score_pairs, batch_size=4, max_wait_s=0.0)
    with pytest.raises(RuntimeError, match="session exploded"):
        batcher.score("q", ["a", "b", "c", "d", "e", "f"])
    np.testing.assert_array_equal(batcher.score("q", ["a", "b"]), [0.0, 1.0])
    np.testing.assert_array_equal(batcher.score("q", []), [])


def test_a_passage_given_twice_is_scored_once_and_both_get_its_logit() -> None:
    scored: list[str] = []

    def score_pairs(pairs: list[tuple[str, str]]) -> np.ndarray:
        scored.extend(passage for _, passage in pairs)
        return np.array([float(len(passage)) for _, passage in pairs], dtype=np.float32)

    batcher = MicroBatcher(score_pairs, batch_size=64, max_wait_s=0.0)
    logits = batcher.score("q", ["ab", "abcd", "ab", "a", "abcd"])
    np.testing.assert_array_equal(logits, [2.0, 4.0, 2.0, 1.0, 4.0])
    assert sorted(scored) == ["a", "ab", "abcd"]
