"""The cross-encoder against a direct ONNX Runtime run of the same real model (the offline stand-in)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from services.reranker.batcher import MicroBatcher
from services.reranker.cross_encoder import MODEL_FILES, TOKENIZER_FILE, CrossEncoder
from services.reranker.provision import HEAD_FIT_TEXTS, MIN_SPEARMAN, ProvisionReport
from tests.reranker.conftest import passages

QUESTION = "How does TCP guarantee delivery?"


def direct_logits(model_dir: Path, precision: str, pairs: list[tuple[str, str]]) -> np.ndarray:
    """Each pair alone through a plain InferenceSession: no batching, no padding, no helpers."""
    session = ort.InferenceSession(
        str(model_dir / MODEL_FILES[precision]), providers=["CPUExecutionProvider"]
    )
    tokenizer = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=512)
    logits = []
    for question, passage in pairs:
        e = tokenizer.encode(question, passage)
        feed = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        logits.append(session.run(None, feed)[0][0, 0])
    return np.array(logits, dtype=np.float32)


class RunRecorder:
    """Wraps the real session to record the shape of every run."""

    def __init__(self, session: ort.InferenceSession) -> None:
        self.session = session
        self.shapes: list[tuple[int, int]] = []

    def get_inputs(self):  # type: ignore[no-untyped-def]
        return self.session.get_inputs()

    def run(self, names, feed):  # type: ignore[no-untyped-def]
        self.shapes.append(feed["input_ids"].shape)
        return self.session.run(names, feed)


@pytest.mark.parametrize("count", [1, 63, 64, 65, 200])
def test_batches_of_64_give_each_pair_its_direct_onnx_logit(standin_dir: Path, count: int) -> None:
    encoder = CrossEncoder(standin_dir, threads=1, precision="fp32")
    recorder = RunRecorder(encoder._session)
    encoder._session = recorder  # type: ignore[assignment]
    batch_sizes: list[int] = []

    def score_pairs(pairs: list[tuple[str, str]]) -> np.ndarray:
        batch_sizes.append(len(pairs))
        return encoder.score_pairs(pairs)

    texts = passages(count)
    logits = MicroBatcher(score_pairs, batch_size=64, max_wait_s=0.01).score(QUESTION, texts)
    assert batch_sizes == [min(64, count - 64 * i) for i in range(math.ceil(count / 64))]
    lengths = [len(e.ids) for e in encoder.tokenize([(QUESTION, t) for t in texts])]
    assert recorder.shapes == [(1, n) for n in lengths], "each pair runs alone, unpadded"
    expected = direct_logits(standin_dir, "fp32", [(QUESTION, t) for t in texts])
    np.testing.assert_array_equal(logits, expected)


def test_int8_runs_one_pair_per_call_and_equals_direct_run(unverified_int8_dir: Path) -> None:
    """Dynamic int8 picks one activation scale per run; scored alone, a pair's logit is its own."""
    encoder = CrossEncoder(unverified_int8_dir, threads=1, precision="int8")
    texts = passages(70, seed=3)
    logits = encoder.score(QUESTION, texts)
    expected = direct_logits(unverified_int8_dir, "int8", [(QUESTION, t) for t in texts])
    np.testing.assert_array_equal(logits, expected)


def test_int8_file_exists_only_when_it_ranks_like_fp32(standin: tuple[Path, ProvisionReport]) -> None:
    model_dir, report = standin
    assert report.int8_verified == (report.spearman_int8_vs_fp32 >= MIN_SPEARMAN)
    assert (model_dir / MODEL_FILES["int8"]).exists() == report.int8_verified
    assert (model_dir / MODEL_FILES["fp32"]).exists()


def test_standin_scores_spread_across_the_threshold(standin_dir: Path) -> None:
    """The fitted head gives logits with real spread, so threshold tests exercise both sides."""
    texts = [text for pair in HEAD_FIT_TEXTS for text in pair]
    logits = CrossEncoder(standin_dir, threads=1, precision="fp32").score(QUESTION, texts)
    assert logits.max() - logits.min() > 2.0
    assert (logits >= -5.0).any() and (logits < -5.0).any()
