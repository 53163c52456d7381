"""Score (question, passage) pairs with an ONNX cross-encoder, reading the raw logit.

Pairs are tokenised in one batch call, sorted by token length and cut into batches, and each run
is padded only to its own longest pair: on a CPU most of the cost of a fixed 512-token pad is
spent on padding.

A pair's logit must not depend on which other pairs share its batch (the micro-batcher mixes
questions from different users, and the threshold decides what survives). The fp32 graph is
row-independent, so a whole batch goes in one run. Dynamic int8 quantisation is not: it picks one
activation scale per tensor, i.e. per run, and measured on the stand-in a logit moved by up to
2.6 between scoring a pair alone and inside a batch of 48. So an int8 batch is run one pair per
session call: exact, unpadded, and on a CPU no slower (see bench/reranker_throughput.py).
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

    def __init__(
        self, model_dir: Path, threads: int = 0, batch_size: int = 64, precision: Precision = "int8"
    ) -> None:
        model_path = model_dir / MODEL_FILES[precision]
        if not model_path.exists():
            raise ModelMissingError(
                f"no {precision} cross-encoder at {model_path}; run `hindsight models pull` "
                "(int8 is written only once it ranks pairs like fp32)"
            )
        self.name = f"{model_label(model_dir)} [{precision}]"
        self.batch_size = batch_size
        self.rows_per_run = 1 if precision == "int8" else batch_size
        self._session = create_session(model_path, threads)
        self._tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, MAX_PAIR_TOKENS)
        self._tokenizer.no_padding()
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        """Raw logits, one per passage, in the order given."""
        return self.score_pairs([(question, passage) for passage in passages])

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Raw logits in the order given, computed in length-sorted batches of ``batch_size``."""
        encodings = self._tokenizer.encode_batch(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        logits = np.zeros(len(pairs), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            for run_start in range(0, len(batch), self.rows_per_run):
                run = batch[run_start : run_start + self.rows_per_run]
                logits[run] = self._run([encodings[i] for i in run])
        return logits

    def _run(self, encodings: list[Encoding]) -> np.ndarray:
        """One session call, padded to the longest pair in it."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = encoding.ids, 1, encoding.type_ids
        (logits, *_) = self._session.run(None, encoder_inputs(self._session, ids, mask, types))
        return np.asarray(logits, dtype=np.float32).reshape(len(encodings), -1)[:, 0]
