"""Build the embedder: the packaged all-MiniLM-L6-v2, exported to ONNX, quantised to int8 per row and
checked against fp32.

Imported only by ``hindsight models prepare`` (and the Dockerfile): it needs torch and transformers,
which the runtime path never loads.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from provisioning.calibration import CALIBRATION_TEXTS, FIT_TEXTS, encoder_feeds
from provisioning.onnx_export import export_encoder_onnx, packaged_minilm_dir
from provisioning.row_int8 import quantize_int8_per_row
from shared.embedding import EMBEDDER_MAX_TOKENS, MODEL_FILE, TOKENIZER_FILE, OnnxEmbedder, mean_pool
from shared.onnx_runtime import create_session, encoder_inputs, load_tokenizer

FP32_FILE = "model_fp32.onnx"
MIN_EMBEDDER_COSINE = 0.99


def _fp32_embeddings(model_path: Path, tokenizer_path: Path, texts: list[str]) -> np.ndarray:
    session = create_session(model_path)
    tokenizer = load_tokenizer(tokenizer_path, 256)
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    types = np.array([e.type_ids for e in encodings], dtype=np.int64)
    (hidden, *_) = session.run(None, encoder_inputs(session, ids, mask, types))
    return mean_pool(hidden, mask)


def prepare_embedder(target_dir: Path, force: bool = False) -> dict[str, float]:
    """Export the packaged MiniLM to ONNX, quantise it per row (``provisioning.row_int8``) and check it
    against fp32.

    Per-row int8 makes a text's vector a function of that text alone, whatever shares its batch
    (docs/decisions/int8-models.md). Returns the agreement figures; raises if the int8 model drifts
    below the cosine bound, so a lossy model is never installed.
    """
    if (target_dir / MODEL_FILE).exists() and not force:
        return json.loads((target_dir / "prepare.json").read_text())
    from transformers import AutoModel

    source = packaged_minilm_dir()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fp32 = work / FP32_FILE
        export_encoder_onnx(AutoModel.from_pretrained(str(source)), fp32)
        shutil.copy(source / TOKENIZER_FILE, work / TOKENIZER_FILE)
        feeds = encoder_feeds(work / TOKENIZER_FILE, FIT_TEXTS, EMBEDDER_MAX_TOKENS)
        quantize_int8_per_row(fp32, work / MODEL_FILE, feeds)
        reference = _fp32_embeddings(fp32, work / TOKENIZER_FILE, CALIBRATION_TEXTS)
        quantised = OnnxEmbedder(work).embed_documents(CALIBRATION_TEXTS)
        cosines = (reference * quantised).sum(axis=1)
        figures = {"min_cosine": float(cosines.min()), "mean_cosine": float(cosines.mean())}
        if figures["min_cosine"] < MIN_EMBEDDER_COSINE:
            raise RuntimeError(f"int8 embedder drifted from fp32: {figures}")
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in (MODEL_FILE, TOKENIZER_FILE):
            shutil.copy(work / name, target_dir / name)
        (target_dir / "prepare.json").write_text(json.dumps(figures, indent=2))
    return figures
