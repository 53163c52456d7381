"""ONNX Runtime plumbing shared by the embedder and the cross-encoder.

Both models are BERT-style encoders run with ONNX Runtime and a ``tokenizers`` tokenizer, from the
int8 (or fp32) files that ``provisioning`` writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from shared.cpu import available_cores


def create_session(model_path: Path, threads: int = 0) -> ort.InferenceSession:
    """A CPU session with ``threads`` intra-op threads (0 = the cores available to the process)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or available_cores()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Worker threads spin between the many small kernels of one run instead of sleeping and waking.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


def load_tokenizer(path: Path, max_length: int) -> Tokenizer:
    """The tokenizer with truncation at ``max_length`` and padding to the longest item in a batch.

    Packaged tokenizer files often bake in fixed padding (e.g. 128); padding every batch to a fixed
    length wastes most of the compute on short inputs, so it is always overridden here.
    """
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=max_length)
    pad_id = tokenizer.token_to_id("[PAD]") or 0
    tokenizer.enable_padding(pad_id=pad_id, pad_token="[PAD]")
    return tokenizer


def encoder_inputs(
    session: ort.InferenceSession, ids: np.ndarray, mask: np.ndarray, type_ids: np.ndarray
) -> dict[str, np.ndarray]:
    """Feed only the inputs the exported graph declares (some exports drop ``token_type_ids``)."""
    available = {"input_ids": ids, "attention_mask": mask, "token_type_ids": type_ids}
    return {inp.name: available[inp.name] for inp in session.get_inputs()}


def runs_side_by_side(
    runs: list[list[int]],
    encodings: list[Encoding],
    run: Callable[[list[Encoding]], np.ndarray],
    pool: ThreadPoolExecutor | None,
) -> Iterable[np.ndarray]:
    """``run`` over each run's encodings, results in the runs' order: on ``pool`` side by side,
    longest first (the cores then finish together), or here one after the other without a pool."""

    def run_one(indices: list[int]) -> np.ndarray:
        return run([encodings[i] for i in indices])

    if pool is None or len(runs) < 2:
        return map(run_one, runs)
    cost = [max(len(encodings[i].ids) for i in indices) * len(indices) for indices in runs]
    futures = {r: pool.submit(run_one, runs[r]) for r in sorted(range(len(runs)), key=lambda r: -cost[r])}
    return (futures[r].result() for r in range(len(runs)))


def padded_arrays(encodings: list[Encoding], pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids, attention mask and type ids of unpadded encodings, padded to the longest of them."""
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        ids[row, :n], mask[row, :n], types[row, :n] = encoding.ids, 1, encoding.type_ids
    return ids, mask, types


# The x86 extensions ONNX Runtime's int8 GEMMs (MLAS) pick their kernels by, slowest to fastest.
INT8_EXTENSIONS = ("avx2", "avx512bw", "avx_vnni", "avx512_vnni", "amx_int8")


def _cpuinfo_field(name: str) -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    return next((line.split(":", 1)[1].strip() for line in lines if line.split(":")[0].strip() == name), "")


def cpu_int8_extensions() -> list[str]:
    """Which of :data:`INT8_EXTENSIONS` this CPU has (Linux; empty where /proc/cpuinfo is not)."""
    flags = set(_cpuinfo_field("flags").split())
    return [flag for flag in INT8_EXTENSIONS if flag in flags]


def cpu_label() -> str:
    """The CPU's model name and int8 extensions, as benchmarks and provisioning records print it."""
    extensions = ", ".join(cpu_int8_extensions()) or "none known"
    return f"{_cpuinfo_field('model name') or 'unknown CPU'} ({available_cores()} cores; int8: {extensions})"
