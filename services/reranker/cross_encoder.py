"""Score (question, passage) pairs with an ONNX cross-encoder, reading the raw logit.

The micro-batcher hands this class batches of up to 64 pairs from different questions. They are
tokenised in one call, sorted by length, and run through the session in groups of ``pairs_per_run``,
each group padded to its longest pair (dynamic padding), then put back in the order given.

A pair's logit must be a function of that pair alone: the batcher mixes different users'
questions and the threshold decides what survives. Both served models guarantee it, bit for bit
(tests/reranker prove it for every group size): fp32 has no data-dependent scales, and the int8
model is weight-only (``MatMulNBits``), quantising activations per row and block, never per run.
The dynamic int8 it replaces picked one activation scale per run, so a pair's logit moved by up
to 2.6 with its batch neighbours and every pair had to run alone.

``PAIRS_PER_RUN`` is measured, not assumed: on this project's 2-core CPU runs of 4 were as fast
as or faster than single pairs, and runs of 64 2-4x slower: they spend their time on padding and on
activations that no longer fit in cache (bench/reranker_throughput.py prints each).
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
PAIRS_PER_RUN = 4


def model_label(model_dir: Path) -> str:
    """The model's name as provisioned; a stand-in says so."""
    provenance = model_dir / PROVENANCE_FILE
    if provenance.exists():
        return str(json.loads(provenance.read_text()).get("name", model_dir.name))
    return model_dir.name


class CrossEncoder:
    """One warm ONNX Runtime session; not thread-safe by design (the micro-batcher owns it)."""

    def __init__(
        self,
        model_dir: Path,
        threads: int = 0,
        precision: Precision = "int8",
        pairs_per_run: int = PAIRS_PER_RUN,
    ) -> None:
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
        self.pairs_per_run = pairs_per_run

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        """Raw logits, one per passage, in the order given."""
        return self.score_pairs([(question, passage) for passage in passages])

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Raw logits in the order given: one tokenisation, length-sorted runs padded to their longest."""
        encodings = self.tokenize(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        logits = np.zeros(len(pairs), dtype=np.float32)
        for start in range(0, len(order), self.pairs_per_run):
            group = order[start : start + self.pairs_per_run]
            logits[group] = self.run([encodings[i] for i in group])
        return logits

    def tokenize(self, pairs: list[tuple[str, str]]) -> list[Encoding]:
        return self._tokenizer.encode_batch(pairs)

    def run(self, encodings: list[Encoding]) -> np.ndarray:
        """One session call over pairs padded to the longest of them."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = encoding.ids, 1, encoding.type_ids
        (logits, *_) = self._session.run(None, encoder_inputs(self._session, ids, mask, types))
        return np.asarray(logits, dtype=np.float32).reshape(len(encodings), -1)[:, 0]
