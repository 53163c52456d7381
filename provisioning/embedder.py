"""Build the embedder: the packaged all-MiniLM-L6-v2, exported to ONNX, quantised to int8 per row,
checked against fp32, and its run plan measured on this CPU.

* Export with eager attention: its additive [batch, 1, 1, tokens] mask costs one broadcast Add per
  layer, where the SDPA export masked every [batch, heads, tokens, tokens] score tensor with a Where
  and cleaned the softmax with IsNaN and another Where (29 % of an int8 run; docs/decisions/
  embedder-speed.md).
* Quantise per row (``provisioning.row_int8``), smoothed on the fit texts with each of
  :data:`SMOOTHING_ALPHAS`; install the one closest to fp32, and only if its vectors keep cosine >=
  :data:`MIN_EMBEDDER_COSINE` on short sentences *and* on long passages filling the 256-token window
  (the check set; disjoint from the fit set).
* Write a copy without the attention mask's Adds, for runs without padding (a text alone, or texts
  of one length), if it gives the check texts the same vectors bit for bit.
* Measure, on this CPU, the run plan (:class:`shared.embedding.RunPlan`): tokens per session run,
  per CPU-second on one core, then side by side on every core against one run on all cores, and
  record it in ``prepare.json`` with the CPU and its int8 extensions, which decide what is fastest.

Imported only by ``hindsight models prepare`` (and the Dockerfile): it needs torch and transformers,
which the runtime path never loads.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from provisioning.calibration import CALIBRATION_TEXTS, FIT_TEXTS, LONG_CHECK_PASSAGES, encoder_feeds
from provisioning.onnx_export import export_encoder_onnx, packaged_minilm_dir
from provisioning.row_int8 import quantize_int8_per_row
from shared.cpu import available_cores
from shared.embedding import EMBEDDER_MAX_TOKENS, OnnxEmbedder, RunPlan, mean_pool
from shared.model_files import MODEL_FILE, PREPARE_FILE, TOKENIZER_FILE, UNMASKED_MODEL_FILE
from shared.onnx_runtime import cpu_int8_extensions, cpu_label, create_session, encoder_inputs, load_tokenizer

FP32_FILE = "model_fp32.onnx"
MIN_EMBEDDER_COSINE = 0.99
# Smoothing strengths tried (``provisioning.row_int8``); the one closest to fp32 on the check set is
# installed. Min cosine on long passages: 0.998 at 0.5, 0.990 at 0.7 (the cross-encoder's), 0.987 at 0.9.
SMOOTHING_ALPHAS = (0.5, 0.7)
# Tokens per session run that provisioning tries (texts x padded width).
RUN_TOKEN_CHOICES = (256, 512, 1024, 2048)
# Long passages that fill the whole window: two check passages joined (truncated at 256 tokens).
WINDOW_PASSAGES = [
    f"{a}\n\n{b}"
    for a, b in zip(LONG_CHECK_PASSAGES, LONG_CHECK_PASSAGES[1:] + LONG_CHECK_PASSAGES[:1], strict=True)
]
CHECK_SETS = {"short": CALIBRATION_TEXTS, "long": LONG_CHECK_PASSAGES + WINDOW_PASSAGES}


def fp32_embeddings(model_path: Path, tokenizer_path: Path, texts: list[str]) -> np.ndarray:
    """The fp32 graph's vectors, one text per run (no padding): the reference int8 is checked on."""
    session = create_session(model_path, 1)
    tokenizer = load_tokenizer(tokenizer_path, EMBEDDER_MAX_TOKENS)
    tokenizer.no_padding()
    vectors = []
    for encoding in tokenizer.encode_batch(texts):
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        types = np.array([encoding.type_ids], dtype=np.int64)
        (hidden, *_) = session.run(None, encoder_inputs(session, ids, mask, types))
        vectors.append(mean_pool(hidden, mask)[0])
    return np.stack(vectors)


def agreement(fp32: Path, model_dir: Path) -> dict[str, float]:
    """Min and mean cosine of the int8 model's vectors to fp32's, per check set and overall."""
    embedder = OnnxEmbedder(model_dir, threads=1)
    figures: dict[str, float] = {}
    every: list[np.ndarray] = []
    for name, texts in CHECK_SETS.items():
        cosines = (
            fp32_embeddings(fp32, model_dir / TOKENIZER_FILE, texts) * embedder.embed_documents(texts)
        ).sum(axis=1)
        figures[f"min_cosine_{name}"] = float(cosines.min())
        every.append(cosines)
    cosines = np.concatenate(every)
    figures["min_cosine"], figures["mean_cosine"] = float(cosines.min()), float(cosines.mean())
    return figures


def _best_rate(
    embed: Callable[[list[str]], object], texts: list[str], rounds: int, clock: Callable[[], float]
) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = clock()
        embed(texts)
        best = min(best, clock() - started)
    return len(texts) / best


def measure_run_plan(model_dir: Path, rounds: int = 3) -> tuple[RunPlan, dict[str, float]]:
    """The fastest plan on this CPU for a mix of long passages and short sentences, and the rates.

    Tokens per run are compared per CPU-second on one core (thread time: other work on the machine
    does not move it); then, with several cores, side-by-side runs against one run on all cores by
    wall time, interleaved, best of ``rounds``."""
    texts = (CHECK_SETS["long"] + CALIBRATION_TEXTS) * 4
    rates: dict[str, float] = {}
    for tokens in RUN_TOKEN_CHOICES:
        embedder = OnnxEmbedder(model_dir, threads=1, plan=RunPlan(run_tokens=tokens))
        rates[f"runs of {tokens} tokens, 1 core (texts/cpu-s)"] = _best_rate(
            embedder.embed_documents, texts, rounds, time.thread_time
        )
    best_tokens = max(RUN_TOKEN_CHOICES, key=lambda t: rates[f"runs of {t} tokens, 1 core (texts/cpu-s)"])
    plan = RunPlan(run_tokens=best_tokens)
    if available_cores() > 1:
        side = OnnxEmbedder(model_dir, plan=RunPlan(run_tokens=best_tokens, side_by_side=True))
        whole = OnnxEmbedder(model_dir, plan=RunPlan(run_tokens=best_tokens, side_by_side=False))
        best = {"side by side": 0.0, "one run on all cores": 0.0}
        for _ in range(rounds):
            best["side by side"] = max(
                best["side by side"], _best_rate(side.embed_documents, texts, 1, time.perf_counter)
            )
            best["one run on all cores"] = max(
                best["one run on all cores"], _best_rate(whole.embed_documents, texts, 1, time.perf_counter)
            )
        rates.update({f"{how}, {available_cores()} cores (texts/s)": rate for how, rate in best.items()})
        plan = RunPlan(
            run_tokens=best_tokens, side_by_side=best["side by side"] >= best["one run on all cores"]
        )
    return plan, {name: round(rate, 1) for name, rate in rates.items()}


def drop_attention_mask(source: Path, target: Path) -> int:
    """Write ``target``: ``source`` without the Adds that apply the attention mask to the scores (an
    Add with one input computed from ``attention_mask`` and one not), and without what only fed them;
    returns how many Adds went. For runs without padding the mask adds zeros: the scores, and so the
    vectors, stay the same bit for bit (:func:`unmasked_agrees` checks that before it is installed)."""
    import onnx

    model = onnx.load(str(source))
    tainted = {"attention_mask"}  # computed from the mask; an Add that applies it ends the taint
    applied: dict[str, str] = {}
    for node in model.graph.node:  # topological order: a node's inputs are known before it
        hits = [x in tainted for x in node.input]
        if node.op_type == "Add" and sum(hits) == 1:
            applied[node.output[0]] = node.input[hits.index(False)]
        elif any(hits):
            tainted.update(node.output)
    for node in model.graph.node:
        node.input[:] = [applied.get(x, x) for x in node.input]
    needed = {output.name for output in model.graph.output}
    live = []
    for node in reversed(model.graph.node):
        if node.output[0] not in applied and needed & set(node.output):
            live.append(node)
            needed.update(node.input)
    del model.graph.node[:]
    model.graph.node.extend(reversed(live))
    onnx.save_model(model, str(target))
    return len(applied)


def unmasked_agrees(model_dir: Path) -> bool:
    """Whether the unmasked model gives every check text, run alone, the masked model's vector."""
    texts = [*CALIBRATION_TEXTS, *CHECK_SETS["long"]]
    masked = OnnxEmbedder(model_dir, threads=1, plan=RunPlan(), unmasked=False)
    unmasked = OnnxEmbedder(model_dir, threads=1, plan=RunPlan())
    return all(np.array_equal(masked.embed_query(text), unmasked.embed_query(text)) for text in texts)


def prepare_embedder(target_dir: Path, force: bool = False) -> dict[str, object]:
    """Export the packaged MiniLM to ONNX (eager attention), quantise it per row
    (``provisioning.row_int8``), check it against fp32 and measure its run plan on this CPU.

    Per-row int8 makes a text's vector a function of that text alone, whatever shares its batch
    (docs/decisions/int8-models.md). Returns the record written to ``prepare.json``; raises if the int8
    model drifts below the cosine bound on short or long texts, so a lossy model is never installed.
    """
    if (target_dir / MODEL_FILE).exists() and not force:
        return json.loads((target_dir / PREPARE_FILE).read_text())
    from transformers import AutoModel

    source = packaged_minilm_dir()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fp32 = work / FP32_FILE
        export_encoder_onnx(AutoModel.from_pretrained(str(source), attn_implementation="eager"), fp32)
        shutil.copy(source / TOKENIZER_FILE, work / TOKENIZER_FILE)
        feeds = encoder_feeds(work / TOKENIZER_FILE, FIT_TEXTS, EMBEDDER_MAX_TOKENS)
        by_alpha: dict[float, dict[str, float]] = {}
        for alpha in SMOOTHING_ALPHAS:
            candidate = work / f"alpha-{alpha}"
            candidate.mkdir()
            shutil.copy(work / TOKENIZER_FILE, candidate / TOKENIZER_FILE)
            quantize_int8_per_row(fp32, candidate / MODEL_FILE, feeds, alpha=alpha)
            by_alpha[alpha] = agreement(fp32, candidate)
        alpha = max(by_alpha, key=lambda a: by_alpha[a]["min_cosine"])
        figures = by_alpha[alpha]
        if figures["min_cosine"] < MIN_EMBEDDER_COSINE:
            raise RuntimeError(f"int8 embedder drifted from fp32: {by_alpha}")
        chosen = work / f"alpha-{alpha}"
        dropped = drop_attention_mask(chosen / MODEL_FILE, chosen / UNMASKED_MODEL_FILE)
        if not (dropped and unmasked_agrees(chosen)):
            (chosen / UNMASKED_MODEL_FILE).unlink()
        plan, rates = measure_run_plan(chosen)
        record: dict[str, object] = {
            **figures,
            "smoothing_alpha": alpha,
            "min_cosine_by_alpha": {str(a): f["min_cosine"] for a, f in by_alpha.items()},
            "run_plan": plan.model_dump(),
            "unmasked_runs": (chosen / UNMASKED_MODEL_FILE).exists(),
            "rates": rates,
            "cpu": cpu_label(),
            "int8_extensions": cpu_int8_extensions(),
        }
        target_dir.mkdir(parents=True, exist_ok=True)
        (target_dir / UNMASKED_MODEL_FILE).unlink(missing_ok=True)
        for name in (MODEL_FILE, UNMASKED_MODEL_FILE, TOKENIZER_FILE):
            if (chosen / name).exists():
                shutil.copy(chosen / name, target_dir / name)
        (target_dir / PREPARE_FILE).write_text(json.dumps(record, indent=2))
    return record
