"""``bench/fusion_ceiling.py``'s learned fusion: coordinate ascent finds what ranks the judged
documents first, and a held-out set's score comes from weights that never saw it."""

from __future__ import annotations

import numpy as np

from bench.fusion_ceiling import DISCOUNTS, Candidates, ascend, learned_held_out


def question(gold_feature: float, other_feature: float, dense_says_gold: bool) -> Candidates:
    """Two chunks of two documents: feature 0 (dense) prefers one, feature 1 the other."""
    dense = [1.0, 0.0] if dense_says_gold else [0.0, 1.0]
    features = np.array([[dense[0], gold_feature], [dense[1], other_feature]])
    return Candidates(features, np.array([0, 1]), np.array([1.0, 0.0]), float(DISCOUNTS[0]))


def test_ascent_moves_weight_to_the_feature_that_ranks_the_judged_document_first() -> None:
    questions = [question(1.0, 0.0, dense_says_gold=False) for _ in range(4)]
    start = np.array([1.0, 0.0])
    assert questions[0].ndcg(start, [0, 1]) < 1.0
    weights = ascend([questions], [0, 1], start)
    assert weights[0] == 1.0, "the dense weight stays: scaling every weight changes no ranking"
    assert weights[1] > 0.0
    assert all(q.ndcg(weights, [0, 1]) == 1.0 for q in questions)


def test_a_held_out_set_is_scored_with_weights_ascended_on_the_other_sets_only() -> None:
    # In "a" and "b" feature 1 marks the other document; in "held" it marks the judged one. Weights
    # that had seen "held" would trust feature 1; those from "a" and "b" push it down, so "held"
    # scores as dense alone ranks it (the wrong document first).
    misleading = [question(0.0, 1.0, dense_says_gold=True) for _ in range(3)]
    telling = [question(1.0, 0.0, dense_says_gold=False) for _ in range(3)]
    held, chosen = learned_held_out({"a": misleading, "b": misleading, "held": telling}, [0, 1], 0.8)
    assert chosen["held"][1] <= 0.2
    assert held["held"] == telling[0].ndcg(chosen["held"], [0, 1]) < 1.0
    assert held["a"] == 1.0
