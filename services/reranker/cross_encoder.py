"""Score (question, passage) pairs with an ONNX cross-encoder, reading the raw logit.

The micro-batcher hands this class batches of up to 64 pairs from different questions. They are
tokenised in one call, sorted by length, and run through the session in groups of ``pairs_per_run``,
each group padded to its longest pair (dynamic padding), then put back in the order given.

A pair's logit must be a function of that pair alone: the batcher mixes different users'
questions and the threshold decides what survives. How many pairs may share a run therefore
depends on the model (``PAIRS_PER_RUN``; tests/reranker prove each bit for bit):

* fp32, per-row int8 (one activation scale per token, ``provisioning.row_int8``) and weight-only int8
  (``MatMulNBits``, activations quantised per row and block) have no scale shared across rows: any
  grouping gives the same logits, and runs of 4 are the fastest;
* ORT's dynamic int8 picks one activation scale per run, so a pair's logit moves with its run
  neighbours: provisioning never installs it.

The cores go to runs side by side, not to one run: independent runs on single-threaded session calls
(one session; ``InferenceSession.run`` is thread-safe and releases the GIL) keep every core busy.
Logits are the same either way, bit for bit. Why, with the measurements: docs/decisions/int8-models.md.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

import numpy as np
from tokenizers import Encoding

from shared.cpu import available_cores
from shared.embedding import ModelMissingError
from shared.onnx_runtime import (
    create_session,
    encoder_inputs,
    load_tokenizer,
    padded_arrays,
    runs_side_by_side,
)

Precision = Literal["int8", "fp32"]
RequestedPrecision = Literal["auto", "int8", "fp32"]
MODEL_FILES: dict[str, str] = {"int8": "model_int8.onnx", "fp32": "model_fp32.onnx"}
TOKENIZER_FILE = "tokenizer.json"
PROVENANCE_FILE = "provenance.json"
MAX_PAIR_TOKENS = 512
Int8Scheme = Literal["per-row", "weight-only"]
INT8_SCHEMES: tuple[Int8Scheme, ...] = ("per-row", "weight-only")  # provisioning's order: fastest first
PAIRS_PER_RUN: dict[Int8Scheme | None, int] = {"per-row": 4, "weight-only": 4, None: 4}


def _provenance(model_dir: Path) -> dict[str, object]:
    provenance = model_dir / PROVENANCE_FILE
    return json.loads(provenance.read_text()) if provenance.exists() else {}


HUB_KEEP_LOGIT = -5.0  # the ms-marco cross-encoders' cut, for a model that records none


def calibrated_cuts(model_dir: Path) -> tuple[float, float | None]:
    """The provisioned model's keep cut and answerability cut (None when it was not calibrated)."""
    provenance = _provenance(model_dir)
    keep = provenance.get("keep_logit", HUB_KEEP_LOGIT)
    answerable = provenance.get("answerable_logit")
    return float(keep), (float(answerable) if answerable is not None else None)  # type: ignore[arg-type]


def model_label(model_dir: Path) -> str:
    """The model's name as provisioned; a stand-in says so."""
    return str(_provenance(model_dir).get("name", model_dir.name))


def served_int8_scheme(model_dir: Path) -> Int8Scheme | None:
    """How ``model_int8.onnx`` was quantised, as provisioning recorded it."""
    scheme = _provenance(model_dir).get("int8_scheme")
    return scheme if scheme in INT8_SCHEMES else None  # type: ignore[return-value]


def resolve_precision(model_dir: Path, requested: RequestedPrecision) -> Precision:
    """``auto`` is what provisioning measured fastest among the precisions it verified; without a
    provisioning record, the int8 file if there is one (it is written only once verified), else fp32."""
    if requested != "auto":
        return requested
    served = _provenance(model_dir).get("served_precision")
    if served in ("int8", "fp32"):
        return served  # type: ignore[return-value]
    return "int8" if (model_dir / MODEL_FILES["int8"]).exists() else "fp32"


class CrossEncoder:
    """One warm ONNX Runtime session, run on ``threads`` cores side by side (0 = all available).

    Not meant to be called from several threads at once: the micro-batcher owns it."""

    def __init__(
        self,
        model_dir: Path,
        threads: int = 0,
        precision: RequestedPrecision = "auto",
        pairs_per_run: int | None = None,
    ) -> None:
        """``pairs_per_run`` defaults to what the provisioned model allows (see the module doc)."""
        precision = resolve_precision(model_dir, precision)
        self.precision: Precision = precision
        model_path = model_dir / MODEL_FILES[precision]
        if not model_path.exists():
            raise ModelMissingError(
                f"no {precision} cross-encoder at {model_path}; run `hindsight models pull` "
                "(int8 is written only once it ranks pairs like fp32)"
            )
        scheme = served_int8_scheme(model_dir) if precision == "int8" else None
        self.name = f"{model_label(model_dir)} [{precision}{f' {scheme}' if scheme else ''}]"
        self.parallel_runs = threads or available_cores()
        self._session = create_session(model_path, threads=1)
        self._runners = None
        if self.parallel_runs > 1:
            self._runners = ThreadPoolExecutor(self.parallel_runs, thread_name_prefix="rerank-run")
        self._tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, MAX_PAIR_TOKENS)
        self._tokenizer.no_padding()
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        self.pairs_per_run = pairs_per_run or PAIRS_PER_RUN[scheme]

    @property
    def batches_in_flight(self) -> int:
        """How many batches a micro-batcher should hand this encoder at once: two when runs go to
        the pool, so the next batch is tokenised and queued while this one's last runs finish."""
        return 2 if self._runners is not None else 1

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        """Raw logits, one per passage, in the order given."""
        return self.score_pairs([(question, passage) for passage in passages])

    def score_pairs(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Raw logits in the order given: one tokenisation, length-sorted runs padded to their longest."""
        encodings = self.tokenize(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        size = self.pairs_per_run
        groups = [order[start : start + size] for start in range(0, len(order), size)]
        logits = np.zeros(len(pairs), dtype=np.float32)
        runs = runs_side_by_side(groups, encodings, self.run, self._runners)
        for group, group_logits in zip(groups, runs, strict=True):
            logits[group] = group_logits
        return logits

    def tokenize(self, pairs: list[tuple[str, str]]) -> list[Encoding]:
        return self._tokenizer.encode_batch(pairs)

    def run(self, encodings: list[Encoding]) -> np.ndarray:
        """One session call over pairs padded to the longest of them."""
        ids, mask, types = padded_arrays(encodings, self._pad_id)
        (logits, *_) = self._session.run(None, encoder_inputs(self._session, ids, mask, types))
        return np.asarray(logits, dtype=np.float32).reshape(len(encodings), -1)[:, 0]
