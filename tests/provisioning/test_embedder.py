"""The embedder's check set and run plans: int8 is checked on long passages as well as short sentences,
and however provisioning cuts a call into runs, each text keeps its own vector."""

from __future__ import annotations

import numpy as np

from provisioning.calibration import CALIBRATION_TEXTS, FIT_TEXTS
from provisioning.embedder import CHECK_SETS
from shared.embedding import EMBEDDER_MAX_TOKENS, OnnxEmbedder, RunPlan, length_runs
from shared.onnx_runtime import load_tokenizer
from tests.conftest import require_embedder

MODEL = "all-MiniLM-L6-v2"


def test_the_check_set_holds_short_sentences_and_passages_filling_the_window() -> None:
    tokenizer = load_tokenizer(require_embedder() / MODEL / "tokenizer.json", EMBEDDER_MAX_TOKENS)
    tokenizer.no_padding()
    short = [len(e.ids) for e in tokenizer.encode_batch(CHECK_SETS["short"])]
    long = [len(e.ids) for e in tokenizer.encode_batch(CHECK_SETS["long"])]
    assert max(short) < 40 and min(long) >= 150
    assert sum(n == EMBEDDER_MAX_TOKENS for n in long) >= 6, "some passages fill the whole window"
    assert not set(FIT_TEXTS) & {*CHECK_SETS["short"], *CHECK_SETS["long"]}


def test_runs_stay_within_their_token_budget_sorted_and_cover_every_text_once() -> None:
    lengths = [5, 250, 30, 31, 256, 12, 12, 100, 64, 7]
    runs = length_runs(lengths, run_tokens=256, max_texts=4)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    assert all(len(run) <= 4 and len(run) * max(lengths[i] for i in run) <= 256 for run in runs)
    flat = [lengths[i] for run in runs for i in run]
    assert flat == sorted(flat)


def test_a_texts_vector_is_the_same_whatever_the_run_plan() -> None:
    texts = [*CALIBRATION_TEXTS, *CHECK_SETS["long"]]
    model_dir = require_embedder() / MODEL
    plans = [RunPlan(run_tokens=256), RunPlan(run_tokens=2048), RunPlan(run_tokens=512, side_by_side=False)]
    vectors = [OnnxEmbedder(model_dir, threads=2, plan=plan).embed_documents(texts) for plan in plans]
    assert all(np.array_equal(vectors[0], other) for other in vectors[1:])
