"""Score (question, passage) pairs with an ONNX cross-encoder, reading the raw logit.

Pairs are sorted by length before batching, and each batch is padded only to its own longest
pair: on a CPU most of the cost of a fixed 512-token pad is spent on padding.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from shared.embedding import ModelMissingError
from shared.onnx_runtime import create_session, encoder_inputs, load_tokenizer

MODEL_FILE = "model_int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
MAX_PAIR_TOKENS = 512


def model_label(model_dir: Path) -> str:
    """The model's name as provisioned; a stand-in says so."""
    provenance = model_dir / "provenance.json"
    if provenance.exists():
        return str(json.loads(provenance.read_text()).get("name", model_dir.name))
    return model_dir.name


class CrossEncoder:
    """One warm ONNX Runtime session per process."""

    def __init__(
        self, model_dir: Path, threads: int = 0, batch_size: int = 64, model_file: str = MODEL_FILE
    ) -> None:
        model_path = model_dir / model_file
        if not model_path.exists():
            raise ModelMissingError(f"cross-encoder not found at {model_path}; run `hindsight models pull`")
        self.name = model_label(model_dir)
        self.batch_size = batch_size
        self._session = create_session(model_path, threads)
        self._tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, MAX_PAIR_TOKENS)

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        """Raw logits, one per passage, in the order given."""
        logits = np.zeros(len(passages), dtype=np.float32)
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            logits[batch] = self.score_pairs([(question, passages[i]) for i in batch])
        return logits

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """One forward pass over at most ``batch_size`` pairs."""
        encodings = self._tokenizer.encode_batch(pairs)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (logits, *_) = self._session.run(None, encoder_inputs(self._session, ids, mask, types))
        return np.asarray(logits, dtype=np.float32).reshape(len(pairs), -1)[:, 0]
