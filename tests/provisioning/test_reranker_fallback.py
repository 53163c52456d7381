"""Provisioning serves a verified model whatever the cross-encoder's export looks like: an export below
opset 13 is converted (logits unchanged), a graph without the [CLS] pattern is served unpruned, and
when no int8 scheme works fp32 is served; the record says which, and nothing raises."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from provisioning import reranker
from provisioning.__main__ import provision_reranker
from provisioning.onnx_export import export_encoder_onnx, packaged_minilm_dir
from provisioning.reranker import CONFIG_FILE, quantize_and_verify
from provisioning.standin import STANDIN_NAME, fitted_head
from services.reranker.cross_encoder import MODEL_FILES, TOKENIZER_FILE, CrossEncoder


def exported_standin(model_dir: Path, opset: int = 17, cls_by_slice: bool = False) -> Path:
    """The stand-in cross-encoder (fitted head) exported at ``opset``; with ``cls_by_slice`` its head
    takes [CLS] by a Slice, not the Gather the pruning looks for."""
    import torch
    from transformers import AutoModelForSequenceClassification

    source = packaged_minilm_dir()
    model = AutoModelForSequenceClassification.from_pretrained(
        str(source), num_labels=1, attn_implementation="eager"
    ).eval()
    if cls_by_slice:
        pooler = model.bert.pooler
        pooler.forward = lambda hidden: pooler.activation(pooler.dense(hidden[:, 0:1].squeeze(1)))
    weight, bias = fitted_head(model)
    with torch.no_grad():
        model.classifier.weight.copy_(torch.tensor(weight, dtype=torch.float32)[None])
        model.classifier.bias.fill_(bias)
    model_dir.mkdir(parents=True)
    export_encoder_onnx(model, model_dir / MODEL_FILES["fp32"], opset=opset)
    for name in (TOKENIZER_FILE, CONFIG_FILE):
        shutil.copy(source / name, model_dir / name)
    return model_dir


def opset_of(path: Path) -> int:
    return reranker.graph_opset(onnx.load(str(path)))


def scores(model_dir: Path, precision: str = "fp32") -> np.ndarray:
    return CrossEncoder(model_dir, threads=1, precision=precision).score_pairs(reranker.calibration_pairs())  # type: ignore[arg-type]


def test_an_opset_11_export_is_converted_with_its_logits_unchanged_then_quantised(tmp_path: Path) -> None:
    model_dir = exported_standin(tmp_path / "opset11", opset=11)
    assert opset_of(model_dir / MODEL_FILES["fp32"]) == 11
    before = scores(model_dir)
    report = quantize_and_verify(model_dir, "opset-11 stand-in")
    assert report.opset == "opset 11 converted to 17 (logits unchanged)"
    assert opset_of(model_dir / MODEL_FILES["fp32"]) == 17
    np.testing.assert_allclose(scores(model_dir), before, atol=1e-4)
    assert report.int8_verified and report.int8_scheme == "per-row", report.detail
    assert report.served_precision in report.pairs_per_s


def test_a_graph_without_the_cls_pattern_is_served_whole_and_still_quantised(tmp_path: Path) -> None:
    model_dir = exported_standin(tmp_path / "sliced", cls_by_slice=True)
    report = quantize_and_verify(model_dir, "stand-in without the pattern")
    assert not report.last_layer_pruned and "kept whole" in report.detail
    assert report.int8_verified, report.detail
    assert (model_dir / MODEL_FILES[report.served_precision]).exists()


def test_when_every_int8_scheme_fails_fp32_is_served_and_the_record_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir = exported_standin(tmp_path / "no-int8")

    def unsupported(model_dir: Path, scheme: str) -> None:
        raise ValueError(f"{scheme} cannot quantise this graph")

    monkeypatch.setattr(reranker, "quantize_int8", unsupported)
    report = quantize_and_verify(model_dir, "stand-in")
    assert not report.int8_verified and report.served_precision == "fp32"
    assert set(report.failed_schemes) == {"per-row", "weight-only"}
    assert "per-row failed (ValueError: per-row cannot quantise this graph)" in report.detail
    assert not (model_dir / MODEL_FILES["int8"]).exists()
    assert CrossEncoder(model_dir).name.endswith("[fp32]")


def test_an_unreachable_hub_fails_a_hub_build_and_gives_an_auto_build_the_labelled_standin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def offline(model_dir: Path) -> None:
        raise OSError("huggingface.co: Name or service not known")

    monkeypatch.setattr(reranker, "download", offline)
    with pytest.raises(SystemExit, match="could not download Xenova/ms-marco-MiniLM-L-6-v2"):
        provision_reranker(tmp_path / "hub", "hub")
    report = provision_reranker(tmp_path / "auto", "auto")
    assert report.name == STANDIN_NAME and CrossEncoder(tmp_path / "auto").name.startswith("stand-in")
