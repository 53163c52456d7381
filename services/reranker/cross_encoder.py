"""Score (question, passage) pairs with an ONNX cross-encoder, reading the raw logit.

The micro-batcher hands this class batches of up to 64 pairs; they are tokenised in one batch
call, and then each pair goes through the session on its own, unpadded. Two measurements on this
project's CPU decided that over "pad each batch to its longest pair":

* speed: one pair per run was 1.8x (fp32) and 2.7x (int8) the pairs/s of length-sorted batches
  of 64 padded to their longest pair (bench/reranker_throughput.py prints the padded figure too);
  big padded batches spend their time on padding and on activations that no longer fit in cache.
* exactness: dynamic int8 quantisation picks one activation scale per tensor, i.e. per run, so
  inside a batch a pair's logit depended on its neighbours (up to 2.6 logits on the stand-in).
  The micro-batcher mixes different users' questions and the threshold decides what survives,
  so a logit must be a function of its pair alone. One pair per run makes it so, in both precisions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import numpy as np
from tokenizers import Encoding

from shared.embedding import ModelMissingError
from shared.onnx_runtime import create_session, encoder_inputs, load_tokenizer

Precision = Literal["int8", "fp32"]
MODEL_FILES: dict[str, str] = {"int8": "model_int8.onnx", "fp32": "model_fp32.onnx"}
TOKENIZER_FILE = "tokenizer.json"
PROVENANCE_FILE = "provenance.json"
MAX_PAIR_TOKENS = 512


def model_label(model_dir: Path) -> str:
    """The model's name as provisioned; a stand-in says so."""
    provenance = model_dir / PROVENANCE_FILE
    if provenance.exists():
        return str(json.loads(provenance.read_text()).get("name", model_dir.name))
    return model_dir.name


class CrossEncoder:
    """One warm ONNX Runtime session; not thread-safe by design (the micro-batcher owns it)."""

    def __init__(self, model_dir: Path, threads: int = 0, precision: Precision = "int8") -> None:
        model_path = model_dir / MODEL_FILES[precision]
        if not model_path.exists():
            raise ModelMissingError(
                f"no {precision} cross-encoder at {model_path}; run `hindsight models pull` "
                "(int8 is written only once it ranks pairs like fp32)"
            )
        self.name = f"{model_label(model_dir)} [{precision}]"
        self._session = create_session(model_path, threads)
        self._tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, MAX_PAIR_TOKENS)
        self._tokenizer.no_padding()
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        """Raw logits, one per passage, in the order given."""
        return self.score_pairs([(question, passage) for passage in passages])

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Raw logits in the order given: one batch tokenisation, one unpadded run per pair."""
        encodings = self.tokenize(pairs)
        return np.concatenate([self.run([e]) for e in encodings] or [np.zeros(0, np.float32)])

    def tokenize(self, pairs: list[tuple[str, str]]) -> list[Encoding]:
        return self._tokenizer.encode_batch(pairs)

    def run(self, encodings: list[Encoding]) -> np.ndarray:
        """One session call over pairs padded to the longest of them (the worker passes one)."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = encoding.ids, 1, encoding.type_ids
        (logits, *_) = self._session.run(None, encoder_inputs(self._session, ids, mask, types))
        return np.asarray(logits, dtype=np.float32).reshape(len(encodings), -1)[:, 0]
