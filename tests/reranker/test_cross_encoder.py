"""The cross-encoder against a direct ONNX Runtime run of the same real model (the offline stand-in)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from provisioning import reranker as provision
from provisioning.calibration import FIT_TEXTS
from provisioning.reranker import MIN_SPEARMAN, ProvisionReport
from services.reranker.batcher import MicroBatcher
from services.reranker.cross_encoder import MODEL_FILES, TOKENIZER_FILE, CrossEncoder
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
    """Sorted, padded runs of 8 inside batches of 64 give every pair its own unpadded logit, bit for bit."""
    encoder = CrossEncoder(standin_dir, threads=1, precision="int8", pairs_per_run=8)
    recorder = RunRecorder(encoder._session)
    encoder._session = recorder  # type: ignore[assignment]
    batch_sizes: list[int] = []

    def score_pairs(pairs: list[tuple[str, str]]) -> np.ndarray:
        batch_sizes.append(len(pairs))
        return encoder.score_pairs(pairs)

    texts = passages(count)
    pairs = [(QUESTION, text) for text in texts]  # submitted whole (``score`` would drop repeats)
    logits = MicroBatcher(score_pairs, batch_size=64, max_wait_s=0.01).submit(pairs).result()
    assert batch_sizes == [min(64, count - 64 * i) for i in range(math.ceil(count / 64))]
    lengths = [len(e.ids) for e in encoder.tokenize([(QUESTION, t) for t in texts])]
    expected_shapes = []
    for start in range(0, count, 64):
        ordered = sorted(lengths[start : start + 64])
        expected_shapes += [
            (len(ordered[i : i + 8]), ordered[i : i + 8][-1]) for i in range(0, len(ordered), 8)
        ]
    assert recorder.shapes == expected_shapes, "length-sorted runs of 8, each padded to its longest"
    expected = direct_logits(standin_dir, "int8", [(QUESTION, t) for t in texts])
    np.testing.assert_array_equal(logits, expected)


@pytest.mark.parametrize("precision", ["fp32", "int8"])
@pytest.mark.parametrize("pairs_per_run", [1, 5, 64])
def test_logits_do_not_depend_on_padding_or_neighbours(
    standin_dir: Path, precision: str, pairs_per_run: int
) -> None:
    """Whatever the run size, each pair gets exactly the logit of a direct run of it alone."""
    encoder = CrossEncoder(standin_dir, threads=1, precision=precision, pairs_per_run=pairs_per_run)  # type: ignore[arg-type]
    texts = passages(40, seed=3)
    expected = direct_logits(standin_dir, precision, [(QUESTION, t) for t in texts])
    np.testing.assert_array_equal(encoder.score(QUESTION, texts), expected)


def test_standin_int8_passes_the_ranking_check_and_is_installed(
    standin: tuple[Path, ProvisionReport],
) -> None:
    """The last layer is pruned to [CLS]; per-row int8 is tried first and ranks the check set like
    fp32 on the stand-in, so it is installed."""
    model_dir, report = standin
    assert report.last_layer_pruned and "last layer pruned to [CLS]" in report.detail
    assert report.int8_verified and report.int8_scheme == "per-row"
    assert report.spearman_by_scheme["per-row"] >= MIN_SPEARMAN
    assert report.spearman_int8_vs_fp32 == report.spearman_by_scheme["per-row"]
    assert (model_dir / MODEL_FILES["int8"]).exists() and (model_dir / MODEL_FILES["fp32"]).exists()


def test_per_row_int8_runs_integer_matmuls_with_attention_scores_left_fp32(standin_dir: Path) -> None:
    """Every weight MatMul becomes an integer GEMM; no per-tensor dynamic quantisation is left anywhere."""
    ops = [node.op_type for node in onnx.load(str(standin_dir / MODEL_FILES["int8"])).graph.node]
    assert ops.count("MatMulIntegerToFloat") == 6 * 6, "Q, K, V, attention output, FFN up and down per layer"
    assert ops.count("MatMul") == 6 * 2, "the two activation-by-activation MatMuls of each attention"
    assert "DynamicQuantizeLinear" not in ops and "MatMulInteger" not in ops
    assert ops.count("QuantizeLinear") == 6 * 4, "Q/K/V share one quantised input"


def test_int8_that_ranks_unlike_fp32_is_refused(
    standin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose int8 ranks badly keeps no int8 file: here int8 scores are reversed fp32 scores."""
    for name in ("model_fp32.onnx", "tokenizer.json", "config.json"):
        (tmp_path / name).symlink_to(standin_dir / name)
    real_score_pairs = CrossEncoder.score_pairs

    def reversed_int8(self: CrossEncoder, pairs: list[tuple[str, str]]) -> np.ndarray:
        logits = real_score_pairs(self, pairs)
        return -logits if "[int8" in self.name else logits

    monkeypatch.setattr(CrossEncoder, "score_pairs", reversed_int8)
    report = provision.quantize_and_verify(tmp_path, "reversed")
    assert not report.int8_verified and report.spearman_int8_vs_fp32 < MIN_SPEARMAN
    assert not (tmp_path / MODEL_FILES["int8"]).exists()
    assert "int8 refused" in report.detail


def test_per_row_int8_logit_ignores_a_neighbour_with_far_larger_activations(standin_dir: Path) -> None:
    """A pair's scales are its own: sharing a run with a long, repetitive outlier pair changes nothing."""
    encoder = CrossEncoder(standin_dir, threads=1, precision="int8", pairs_per_run=2)
    assert encoder.pairs_per_run == 2 and "[int8 per-row]" in encoder.name
    texts = passages(6, seed=5)
    outlier = "ZZZZ 9999 !!!! " * 120
    alone = direct_logits(standin_dir, "int8", [(QUESTION, t) for t in texts])
    for text, expected in zip(texts, alone, strict=True):
        np.testing.assert_array_equal(encoder.score(QUESTION, [text, outlier])[0], expected)


def test_standin_scores_spread_across_the_threshold(standin_dir: Path) -> None:
    """The fitted head gives logits with real spread, so threshold tests exercise both sides."""
    logits = CrossEncoder(standin_dir, threads=1, precision="int8").score(QUESTION, FIT_TEXTS)
    assert logits.max() - logits.min() > 2.0
    assert (logits >= -5.0).any() and (logits < -5.0).any()


def test_runs_side_by_side_on_two_cores_give_the_logits_of_one_core(standin_dir: Path) -> None:
    pairs = [(QUESTION, passage) for passage in passages(40, seed=3)]
    one_core = CrossEncoder(standin_dir, threads=1, precision="int8").score_pairs(pairs)
    two_cores = CrossEncoder(standin_dir, threads=2, precision="int8")
    assert two_cores.parallel_runs == 2
    assert two_cores.score_pairs(pairs).tobytes() == one_core.tobytes()
    assert len(set(one_core.tolist())) > 30, "distinct passages get distinct logits"
