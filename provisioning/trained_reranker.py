"""Install Hindsight's own cross-encoder from the weights that ship with the project.

``provisioning/weights/reranker/encoder-NN.safetensors`` hold every weight of the fine-tuned model but
the word embeddings, which stay as the packaged all-MiniLM-L6-v2 has them (training kept them
frozen); ``training.json`` beside it records how it was trained and what it scored. Joined again, the
model is exported to ONNX and quantised and verified like any other cross-encoder
(``reranker.quantize_and_verify``); the cuts calibrated for it (``CALIBRATED_CUTS``) are written
into its provenance, where the reranker reads them.
Training: ``provisioning.reranker_training``; figures: docs/decisions/reranker-training.md.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from provisioning.onnx_export import export_encoder_onnx, packaged_minilm_dir
from provisioning.reranker import CONFIG_FILE, ProvisionReport, quantize_and_verify
from services.reranker.cross_encoder import MODEL_FILES, PROVENANCE_FILE, TOKENIZER_FILE

WEIGHTS_DIR = Path(__file__).parent / "weights" / "reranker"
WEIGHTS_GLOB = "encoder-*.safetensors"
# Written by bench/answerability.py into training.json; the reranker reads them from the provenance.
CALIBRATED_CUTS = ("keep_logit", "answerable_logit")
TRAINED_NAME = "hindsight-reranker-v1 (MiniLM-L6 fine-tuned on Debian manuals)"


class WeightsMismatchError(RuntimeError):
    """The shipped weights do not fit the packaged MiniLM's architecture."""


def shipped_weights() -> Path | None:
    """The folder of the shipped weights, or None when the project ships none."""
    return WEIGHTS_DIR if list(WEIGHTS_DIR.glob(WEIGHTS_GLOB)) else None


def trained_model(weights: Path) -> object:
    """``weights``: a folder of ``encoder-NN.safetensors`` parts."""
    """The packaged MiniLM as a one-logit classifier, every weight but the word embeddings replaced."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(
        str(packaged_minilm_dir()), num_labels=1, attn_implementation="eager"
    ).eval()
    state = {
        name: tensor.to(torch.float32)
        for part in sorted(weights.glob(WEIGHTS_GLOB))
        for name, tensor in load_file(str(part)).items()
    }
    missing, unexpected = model.load_state_dict(state, strict=False)
    left = [name for name in missing if "word_embeddings" not in name]
    if left or unexpected:
        raise WeightsMismatchError(f"{weights}: missing {left[:3]}, unexpected {unexpected[:3]}")
    return model


def build_trained(model_dir: Path, weights: Path | None = None) -> ProvisionReport:
    """Export, quantise and verify the trained cross-encoder into ``model_dir``."""
    weights = weights or shipped_weights()
    if weights is None:
        raise FileNotFoundError(f"no trained weights in {WEIGHTS_DIR}")
    model_dir.mkdir(parents=True, exist_ok=True)
    export_encoder_onnx(trained_model(weights), model_dir / MODEL_FILES["fp32"])
    source = packaged_minilm_dir()
    for file in (TOKENIZER_FILE, CONFIG_FILE):
        shutil.copy(source / file, model_dir / file)
    report = quantize_and_verify(model_dir, TRAINED_NAME)
    training = weights / "training.json"
    cuts = json.loads(training.read_text()) if training.exists() else {}
    provenance = model_dir / PROVENANCE_FILE
    record = json.loads(provenance.read_text())
    record.update({key: cuts[key] for key in CALIBRATED_CUTS if key in cuts})
    provenance.write_text(json.dumps(record, indent=1))
    return report
