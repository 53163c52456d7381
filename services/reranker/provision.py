"""Provision the cross-encoder: pull the real model, or build a stand-in, then quantise and verify.

``hindsight models pull`` fetches ``Xenova/ms-marco-MiniLM-L-6-v2`` where a network exists. Offline
(tests, CI) ``build_standin`` makes a model of the same architecture from the packaged MiniLM
weights with an untrained head: its speed is the real model's, its scores mean nothing.
Either way the int8 file is installed only once its scores rank pairs like the fp32 model's do.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from services.reranker.cross_encoder import MODEL_FILE, TOKENIZER_FILE, CrossEncoder
from shared.model_prep import CALIBRATION_TEXTS, export_encoder_onnx, packaged_minilm_dir
from shared.onnx_runtime import quantize_int8_per_channel

HUB_REPO = "Xenova/ms-marco-MiniLM-L-6-v2"
FP32_FILE = "model_fp32.onnx"
MIN_SPEARMAN = 0.99
STANDIN_NAME = "stand-in cross-encoder (MiniLM-L6 weights, untrained head)"


def calibration_pairs() -> list[tuple[str, str]]:
    """A fixed set of pairs on which int8 must rank like fp32."""
    return [(q, p) for q in CALIBRATION_TEXTS[:4] for p in CALIBRATION_TEXTS]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def quantize_and_verify(model_dir: Path, name: str) -> dict[str, float | str]:
    """Quantise ``model_fp32.onnx`` per channel; refuse the result if it ranks pairs differently."""
    quantize_int8_per_channel(model_dir / FP32_FILE, model_dir / MODEL_FILE)
    pairs = calibration_pairs()
    fp32 = CrossEncoder(model_dir, model_file=FP32_FILE).score_pairs(pairs)
    int8 = CrossEncoder(model_dir).score_pairs(pairs)
    rho = spearman(fp32, int8)
    if rho < MIN_SPEARMAN:
        (model_dir / MODEL_FILE).unlink()
        raise RuntimeError(f"int8 cross-encoder ranks unlike fp32 (Spearman {rho:.4f} < {MIN_SPEARMAN})")
    provenance: dict[str, float | str] = {"name": name, "spearman_int8_vs_fp32": round(rho, 5)}
    (model_dir / "provenance.json").write_text(json.dumps(provenance, indent=2))
    return provenance


def build_standin(model_dir: Path, seed: int = 0) -> dict[str, float | str]:
    """A same-architecture cross-encoder from the packaged MiniLM weights (scores are meaningless)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(seed)
    source = packaged_minilm_dir()
    model = AutoModelForSequenceClassification.from_pretrained(str(source), num_labels=1)
    model_dir.mkdir(parents=True, exist_ok=True)
    export_encoder_onnx(model, model_dir / FP32_FILE)
    shutil.copy(source / TOKENIZER_FILE, model_dir / TOKENIZER_FILE)
    return quantize_and_verify(model_dir, STANDIN_NAME)


def pull(model_dir: Path) -> dict[str, float | str]:
    """Download the trained model from the Hugging Face hub (needs a network), then quantise it."""
    from huggingface_hub import hf_hub_download

    model_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(hf_hub_download(HUB_REPO, "onnx/model.onnx"), model_dir / FP32_FILE)
    for name in (TOKENIZER_FILE, "config.json"):
        shutil.copy(hf_hub_download(HUB_REPO, name), model_dir / name)
    return quantize_and_verify(model_dir, HUB_REPO)


def prepare(model_dir: Path) -> dict[str, float | str] | None:
    """Quantise whatever fp32 model is provisioned in ``model_dir``; ``None`` if there is none."""
    if not (model_dir / FP32_FILE).exists():
        return None
    name = (
        json.loads((model_dir / "provenance.json").read_text())["name"]
        if (model_dir / "provenance.json").exists()
        else model_dir.name
    )
    return quantize_and_verify(model_dir, name)
