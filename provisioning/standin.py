"""An offline stand-in cross-encoder: the architecture of ms-marco-MiniLM-L-6-v2 from the packaged
MiniLM weights, with a head fitted so its scores spread like a trained model's.

Its speed is the real model's, its scores are not: tests and speed measurements only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from provisioning.calibration import FIT_QUESTION_TEXT_PAIRS, FIT_TEXTS
from provisioning.onnx_export import export_encoder_onnx, packaged_minilm_dir
from provisioning.reranker import CONFIG_FILE, ProvisionReport, quantize_and_verify
from services.reranker.cross_encoder import MODEL_FILES, TOKENIZER_FILE

STANDIN_NAME = "stand-in cross-encoder (MiniLM-L6 weights, fitted head; speed is real, scores are not)"


def fitted_head(model: object) -> tuple[np.ndarray, float]:
    """Least-squares head on the pooled features of fixed pairs toward the bi-encoder cosine.

    The target maps cosine [0, 1] to ms-marco-like logits [-10, 10], so the stand-in's scores
    have a real spread (an untrained head spreads them by ~0.01) and straddle the -5 threshold.
    """
    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(packaged_minilm_dir()))
    texts, pairs = FIT_TEXTS, FIT_QUESTION_TEXT_PAIRS
    bert = model.bert  # type: ignore[attr-defined]
    with torch.no_grad():
        single = tokenizer(texts, padding=True, return_tensors="pt")
        hidden = bert(**single).last_hidden_state
        weights = single["attention_mask"].unsqueeze(-1).float()
        sentence = torch.nn.functional.normalize((hidden * weights).sum(1) / weights.sum(1), dim=-1)
        index = {text: i for i, text in enumerate(texts)}
        cosine = np.array([float(sentence[index[q]] @ sentence[index[p]]) for q, p in pairs])
        joint = tokenizer([q for q, _ in pairs], [p for _, p in pairs], padding=True, return_tensors="pt")
        pooled = bert(**joint).pooler_output.numpy().astype(np.float64)
    features = np.hstack([pooled, np.ones((len(pairs), 1))])
    target = 20.0 * cosine - 10.0
    solution = np.linalg.solve(features.T @ features + np.eye(features.shape[1]), features.T @ target)
    return solution[:-1], float(solution[-1])


def build_standin(model_dir: Path) -> ProvisionReport:
    """A same-architecture cross-encoder from the packaged MiniLM weights (scores are not ms-marco's)."""
    import torch
    from transformers import AutoModelForSequenceClassification

    source = packaged_minilm_dir()
    # Eager attention exports the classic softmax pattern that ORT fuses into one Attention op.
    model = AutoModelForSequenceClassification.from_pretrained(
        str(source), num_labels=1, attn_implementation="eager"
    ).eval()
    weight, bias = fitted_head(model)
    with torch.no_grad():
        model.classifier.weight.copy_(torch.tensor(weight, dtype=torch.float32)[None])
        model.classifier.bias.fill_(bias)
    model_dir.mkdir(parents=True, exist_ok=True)
    export_encoder_onnx(model, model_dir / MODEL_FILES["fp32"])
    for file in (TOKENIZER_FILE, CONFIG_FILE):
        shutil.copy(source / file, model_dir / file)
    return quantize_and_verify(model_dir, STANDIN_NAME)
