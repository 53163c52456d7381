"""Provision the cross-encoder: pull the real model (or take a stand-in), then prune, quantise and verify.

``hindsight models pull`` fetches ``Xenova/ms-marco-MiniLM-L-6-v2`` where a network exists. Offline
(tests, CI) ``provisioning.standin`` makes a model of the same architecture from the packaged MiniLM
weights with a fitted head: its speed is the real model's, its scores are not.
Either way the fp32 graph is first brought to opset >= 13 if it was exported below (onnx's version
converter; kept only if the logits stay the same, since per-axis int8 needs opset 13), its last layer
pruned to the one token the head reads (``cls_pruning``; likewise kept only if the logits stay the
same, and skipped when the graph lacks the pattern), then ``model_int8.onnx`` is installed only
once its scores rank a fixed set of pairs like the fp32 model's do (Spearman >= 0.99);
``model_fp32.onnx`` stays next to it, and the record says
which verified precision ran faster on this machine (what ``HINDSIGHT_RERANKER_PRECISION=auto``
serves). Two int8 schemes are tried, fastest first; both give a pair the same logit whichever pairs
share its run:

1. per-row int8 (``provisioning.row_int8``): integer GEMMs with one activation scale per token, smoothed
   on fixed calibration pairs (disjoint from the check set);
2. weight-only int8 of the fused graph (``provisioning.weight_only_int8``): closer to fp32, slower.

A scheme that fails on a graph counts as refused, with its reason, and the next is tried; with none
verified, fp32 is served. No graph the exporters give makes provisioning raise, and the record says
what was served and why. ORT's dynamic int8 (one scale per tensor and run) is never tried. Why, with
the measurements: docs/decisions/int8-models.md.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel

from provisioning.calibration import CALIBRATION_TEXTS, FIT_QUESTION_TEXT_PAIRS, encoder_feeds
from provisioning.cls_pruning import prune_to_cls
from provisioning.row_int8 import quantize_int8_per_row
from provisioning.weight_only_int8 import quantize_int8_weight_only
from services.reranker.cross_encoder import (
    INT8_SCHEMES,
    MAX_PAIR_TOKENS,
    MODEL_FILES,
    PAIRS_PER_RUN,
    PROVENANCE_FILE,
    TOKENIZER_FILE,
    CrossEncoder,
    Int8Scheme,
    Precision,
)

if TYPE_CHECKING:
    from onnx import ModelProto

HUB_REPO = "Xenova/ms-marco-MiniLM-L-6-v2"
CONFIG_FILE = "config.json"
MIN_SPEARMAN = 0.99
# Per-axis QuantizeLinear (per-row int8) needs opset 13; an older export is converted to this one.
MIN_OPSET = 13
TARGET_OPSET = 17
LOGIT_TOLERANCE = 1e-4


class ProvisionReport(BaseModel):
    """What provisioning installed, why int8 is (not) verified, and which precision is served."""

    name: str
    opset: str
    last_layer_pruned: bool
    int8_verified: bool
    int8_scheme: Int8Scheme | None
    spearman_int8_vs_fp32: float | None
    spearman_by_scheme: dict[str, float]
    failed_schemes: dict[str, str] = {}
    pairs_per_s: dict[str, float]
    served_precision: Precision
    detail: str


def pairs_per_second(encoder: CrossEncoder, pairs: list[tuple[str, str]], rounds: int = 3) -> float:
    """Best of ``rounds`` passes over ``pairs``, scored the way the worker scores them."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        encoder.score_pairs(pairs)
        best = min(best, time.perf_counter() - started)
    return round(len(pairs) / best, 1)


def fastest_verified(
    model_dir: Path, pairs: list[tuple[str, str]], int8_verified: bool
) -> dict[Precision, float]:
    """Throughput of each verified precision on this machine (fp32 is the reference, always verified).

    Whether int8 beats fp32 depends on the CPU: on AVX-512 machines fp32 GEMMs are fast enough that
    weight-only int8's per-block scaling costs what it saves, so the measurement decides.
    """
    precisions: list[Precision] = ["fp32", "int8"] if int8_verified else ["fp32"]
    return {p: pairs_per_second(CrossEncoder(model_dir, precision=p), pairs) for p in precisions}


def calibration_pairs() -> list[tuple[str, str]]:
    """A fixed set of pairs on which int8 must rank like fp32."""
    return [(q, p) for q in CALIBRATION_TEXTS[:4] for p in CALIBRATION_TEXTS]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def smoothing_feeds(model_dir: Path) -> list[dict[str, np.ndarray]]:
    """One feed per fit question and text: what per-row int8's smoothing is measured on."""
    return encoder_feeds(model_dir / TOKENIZER_FILE, FIT_QUESTION_TEXT_PAIRS, MAX_PAIR_TOKENS)


def quantize_int8(model_dir: Path, scheme: Int8Scheme) -> None:
    """Write ``model_int8.onnx`` from ``model_fp32.onnx`` with ``scheme``."""
    source, target = model_dir / MODEL_FILES["fp32"], model_dir / MODEL_FILES["int8"]
    if scheme == "per-row":
        quantize_int8_per_row(source, target, smoothing_feeds(model_dir))
        return
    config = json.loads((model_dir / CONFIG_FILE).read_text())
    quantize_int8_weight_only(
        source, target, num_heads=config["num_attention_heads"], hidden_size=config["hidden_size"]
    )


def quantize_and_verify(model_dir: Path, name: str) -> ProvisionReport:
    """Keep the fastest int8 scheme whose scores rank the check set like fp32; none if neither does.

    Both precisions score the check set exactly as the worker would (same runs), so the figure
    is the one that matters in production. A scheme that raises on this graph is refused with its
    reason; fp32 is then what is served.
    """
    int8_path = model_dir / MODEL_FILES["int8"]
    pairs = calibration_pairs()
    opset = upgrade_opset(model_dir, pairs)
    pruned = prune_last_layer(model_dir, pairs)
    fp32 = CrossEncoder(model_dir, precision="fp32").score_pairs(pairs)
    rhos: dict[str, float] = {}
    failed: dict[str, str] = {}
    served: Int8Scheme | None = None
    for scheme in INT8_SCHEMES:
        try:
            quantize_int8(model_dir, scheme)
            int8 = CrossEncoder(model_dir, precision="int8", pairs_per_run=PAIRS_PER_RUN[scheme])
            rhos[scheme] = round(spearman(fp32, int8.score_pairs(pairs)), 5)
        except Exception as exc:  # any failure of a scheme on this graph refuses that scheme only
            failed[scheme] = f"{type(exc).__name__}: {exc}"
            continue
        if rhos[scheme] >= MIN_SPEARMAN:
            served = scheme
            break
    else:
        int8_path.unlink(missing_ok=True)
    detail = int8_detail(served, rhos, failed)
    speeds = fastest_verified(model_dir, pairs, served is not None)
    fastest = max(speeds, key=speeds.__getitem__)
    speed_text = ", ".join(f"{p} {v} pairs/s" for p, v in speeds.items())
    report = ProvisionReport(
        name=name,
        opset=opset,
        last_layer_pruned=pruned,
        int8_verified=served is not None,
        int8_scheme=served,
        spearman_int8_vs_fp32=rhos[served] if served else max(rhos.values(), default=None),
        spearman_by_scheme=rhos,
        failed_schemes=failed,
        pairs_per_s=speeds,
        served_precision=fastest,
        detail=f"{detail}; {opset}; last layer {'pruned to [CLS]' if pruned else 'kept whole'}; "
        f"measured {speed_text}: {fastest} is served",
    )
    (model_dir / PROVENANCE_FILE).write_text(report.model_dump_json(indent=2))
    return report


def int8_detail(served: Int8Scheme | None, rhos: dict[str, float], failed: dict[str, str]) -> str:
    """Why int8 is (not) served, in words: each scheme's Spearman, or why it failed."""
    figures = ", ".join(
        [f"{scheme} {rho:.4f}" for scheme, rho in rhos.items()]
        + [f"{scheme} failed ({reason})" for scheme, reason in failed.items()]
    )
    if served:
        return f"{served} int8 ranks like fp32 (Spearman {figures}; bound {MIN_SPEARMAN})"
    return f"int8 refused: {figures} (bound {MIN_SPEARMAN} against fp32 on the check set)"


def graph_opset(model: ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def upgrade_opset(model_dir: Path, pairs: list[tuple[str, str]]) -> str:
    """Convert ``model_fp32.onnx`` to :data:`TARGET_OPSET` if it is below :data:`MIN_OPSET`, keeping the
    conversion only if the logits of ``pairs`` stay as they were; says what was done."""
    import onnx
    from onnx import version_converter

    fp32 = model_dir / MODEL_FILES["fp32"]
    model = onnx.load(str(fp32))
    opset = graph_opset(model)
    if opset >= MIN_OPSET:
        return f"opset {opset} as exported"
    before = CrossEncoder(model_dir, threads=1, precision="fp32").score_pairs(pairs)
    original = fp32.with_name("model_fp32.original.onnx")
    fp32.replace(original)
    try:
        onnx.save_model(version_converter.convert_version(model, TARGET_OPSET), str(fp32))
        after = CrossEncoder(model_dir, threads=1, precision="fp32").score_pairs(pairs)
    except Exception as exc:  # the converter lacks an adapter for some op, or ORT rejects its output
        original.replace(fp32)
        return f"opset {opset} kept (conversion to {TARGET_OPSET} failed: {type(exc).__name__}: {exc})"
    if not np.allclose(after, before, atol=LOGIT_TOLERANCE):
        original.replace(fp32)
        return f"opset {opset} kept (converted to {TARGET_OPSET}, the logits changed)"
    original.unlink()
    return f"opset {opset} converted to {TARGET_OPSET} (logits unchanged)"


def prune_last_layer(model_dir: Path, pairs: list[tuple[str, str]]) -> bool:
    """Serve ``model_fp32.onnx`` with its last layer pruned to the token the head reads
    (``cls_pruning``) if that leaves the logits of ``pairs`` as they were; True if it is pruned."""
    fp32 = model_dir / MODEL_FILES["fp32"]
    candidate = fp32.with_name("model_fp32.pruned.onnx")
    try:
        outcome = prune_to_cls(fp32, candidate)
    except Exception:  # a graph the pattern search cannot walk is served whole, like one that does not match
        candidate.unlink(missing_ok=True)
        return False
    if outcome != "pruned":
        return outcome == "already pruned"
    full = CrossEncoder(model_dir, threads=1, precision="fp32").score_pairs(pairs)
    original = fp32.with_name("model_fp32.full.onnx")
    fp32.replace(original)
    candidate.replace(fp32)
    pruned = CrossEncoder(model_dir, threads=1, precision="fp32").score_pairs(pairs)
    if np.allclose(pruned, full, atol=LOGIT_TOLERANCE):
        original.unlink()
        return True
    original.replace(fp32)
    return False


def download(model_dir: Path) -> None:
    """Copy the trained model's fp32 ONNX export, tokenizer and config from the Hugging Face hub."""
    from huggingface_hub import hf_hub_download

    model_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(hf_hub_download(HUB_REPO, "onnx/model.onnx"), model_dir / MODEL_FILES["fp32"])
    for name in (TOKENIZER_FILE, CONFIG_FILE):
        shutil.copy(hf_hub_download(HUB_REPO, name), model_dir / name)


def pull(model_dir: Path) -> ProvisionReport:
    """Download the trained model from the Hugging Face hub (needs a network), then quantise it."""
    download(model_dir)
    return quantize_and_verify(model_dir, HUB_REPO)


def prepare(model_dir: Path) -> ProvisionReport | None:
    """Quantise whatever fp32 model is provisioned in ``model_dir``; ``None`` if there is none."""
    if not (model_dir / MODEL_FILES["fp32"]).exists():
        return None
    provenance = model_dir / PROVENANCE_FILE
    name = json.loads(provenance.read_text())["name"] if provenance.exists() else model_dir.name
    return quantize_and_verify(model_dir, name)
