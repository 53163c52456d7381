"""Pairs/s of the reranker worker vs sentence_transformers.CrossEncoder (PyTorch fp32), same pairs.

Same model, same pairs, same run, same thread count. Offline the model is the stand-in built from
the packaged MiniLM-L6 weights (same architecture as ms-marco-MiniLM-L-6-v2: speed carries over,
scores do not); every figure printed says so.

    PYTHONPATH=. python bench/reranker_throughput.py --pairs 512 --repeats 4

Two workloads over the same pairs:

* **questions** (the target): questions of 20-64 candidates each, as the rerank stage sends them.
  The worker gets them all at once, as concurrent rerank tasks hand them to its micro-batcher;
  ``CrossEncoder.predict`` scores each question in one call, as a rerank task built on it would
  (it sorts that question's pairs by length and batches them by 32, its default).
* **one call**: every pair in a single call; ``predict`` then sorts all of them by length before
  batching, its best case, which no per-question service gets.

Also printed: both int8 schemes provisioning tries (per-row with several run sizes, weight-only),
how far the served model's logits move when a pair shares a run of 64 instead of running alone
(0 is the requirement: the worker's batches mix different users' questions), per-CPU-second
figures with one thread each, the latency of one question of 35 and of 60 pairs, and what this CPU
allows int8: one int8 and one fp32 GEMM at a feed-forward layer's shape on one core, and the CPU's
int8 extensions (without VNNI or AMX, int8 GEMMs run only ~2x fp32).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from provisioning.calibration import CALIBRATION_TEXTS, FIT_PAIRS, FIT_TEXTS
from provisioning.onnx_export import packaged_minilm_dir
from provisioning.reranker import CONFIG_FILE, quantize_int8
from provisioning.standin import build_standin, fitted_head
from services.reranker.batcher import MicroBatcher
from services.reranker.cross_encoder import MODEL_FILES, TOKENIZER_FILE, CrossEncoder, Int8Scheme
from shared.cpu import available_cores

TORCH = "sentence_transformers.CrossEncoder torch fp32"
TORCH_BATCH = 32  # predict()'s default
T = TypeVar("T")
LABEL = "[offline stand-in: MiniLM-L6 weights, fitted head; speed carries over, scores do not]"


def bench_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """Questions against passages of 1-12 sentences (~15-250 tokens), like expanded chunks."""
    rng = random.Random(seed)
    sentences = FIT_TEXTS + CALIBRATION_TEXTS
    questions = [question for question, _ in FIT_PAIRS]
    return [
        (rng.choice(questions), " ".join(rng.choices(sentences, k=rng.randint(1, 12)))) for _ in range(count)
    ]


def bench_questions(pairs: list[tuple[str, str]], seed: int = 0) -> list[list[tuple[str, str]]]:
    """``pairs`` cut into questions of 20-64 candidates (the rerank stage sends 35 or 60), each
    under one question text."""
    rng = random.Random(seed)
    questions: list[list[tuple[str, str]]] = []
    start = 0
    while start < len(pairs):
        size = rng.randint(20, 64)
        question = pairs[start][0]
        questions.append([(question, passage) for _, passage in pairs[start : start + size]])
        start += size
    return questions


def flat(questions: list[list[tuple[str, str]]]) -> list[tuple[str, str]]:
    return [pair for question in questions for pair in question]


def pairs_per_second(
    contenders: list[tuple[str, Callable[[list[T]], object]]],
    pairs: list[T],
    rounds: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Items/s, best of ``rounds``; each round times every contender in turn, so load spikes from
    other processes on the shared cores hit all of them alike instead of one. With
    ``time.thread_time`` (single-threaded contenders only) the figure is per CPU-second, which other
    load barely moves. (The speed suite times embedders with it too: any items, any scoring function.)"""
    best = {name: float("inf") for name, _ in contenders}
    for _, score in contenders:
        score(pairs[:8])
    for _ in range(rounds):
        for name, score in contenders:
            start = clock()
            score(pairs)
            best[name] = min(best[name], clock() - start)
    return {name: len(pairs) / seconds for name, seconds in best.items()}


def torch_baseline(model_dir: Path, threads: int) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    """The stand-in's exact weights (same fitted head) in sentence-transformers' CrossEncoder."""
    import torch
    from sentence_transformers import CrossEncoder as TorchCrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(threads)
    source = packaged_minilm_dir()
    model = AutoModelForSequenceClassification.from_pretrained(str(source), num_labels=1).eval()
    weight, bias = fitted_head(model)
    with torch.no_grad():
        model.classifier.weight.copy_(torch.tensor(weight, dtype=torch.float32)[None])
        model.classifier.bias.fill_(bias)
    model.save_pretrained(model_dir)
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(model_dir)
    encoder = TorchCrossEncoder(str(model_dir), num_labels=1, device="cpu", max_length=512)
    identity = torch.nn.Identity()  # raw logits, as the worker reads them
    return lambda pairs: encoder.predict(
        pairs, batch_size=TORCH_BATCH, activation_fn=identity, show_progress_bar=False
    )


def scheme_dir(model_dir: Path, scheme: Int8Scheme, target: Path) -> Path:
    """The stand-in quantised with ``scheme`` whatever provisioning chose, to time both schemes."""
    target.mkdir()
    for name in (TOKENIZER_FILE, CONFIG_FILE, MODEL_FILES["fp32"]):
        (target / name).symlink_to(model_dir / name)
    quantize_int8(target, scheme)
    return target


def latency_ms(batcher: MicroBatcher, size: int, repeats: int) -> tuple[float, float]:
    samples = []
    for seed in range(repeats):
        pairs = bench_pairs(size, seed=100 + seed)
        start = time.perf_counter()
        batcher.submit(pairs).result()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]


Scorer = Callable[[list[tuple[str, str]]], object]


def as_service(batcher: MicroBatcher) -> Callable[[list[list[tuple[str, str]]]], object]:
    """All questions handed to the worker at once, as concurrent rerank tasks do; waits for all."""
    return lambda questions: [future.result() for future in [batcher.submit(q) for q in questions]]


def per_question(score: Scorer) -> Callable[[list[list[tuple[str, str]]]], object]:
    """One call per question, as a rerank task built on the scorer would make."""
    return lambda questions: [score(question) for question in questions]


def question_pairs_per_second(
    contenders: list[tuple[str, Callable[[list[list[tuple[str, str]]]], object]]],
    questions: list[list[tuple[str, str]]],
    rounds: int,
) -> dict[str, float]:
    """``pairs_per_second`` over whole questions, counted in pairs."""
    rates = pairs_per_second(contenders, questions, rounds)
    pairs_per_question = len(flat(questions)) / len(questions)
    return {name: rate * pairs_per_question for name, rate in rates.items()}


def print_rates(title: str, rates: dict[str, float], baseline: str) -> None:
    print(f"\n{title}")
    for name, rate in rates.items():
        print(f"  {name:<62} {rate:8.1f} pairs/s  {rate / rates[baseline]:5.2f}x torch")


def cpu_int8_flags() -> str:
    """The CPU's integer dot-product extensions: VNNI and AMX speed int8 GEMMs up over plain AVX2."""
    try:
        flags = next(
            line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")
        )
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
    return " ".join(flag for flag in wanted if f" {flag}" in flags) or "none of avx2/avx512/vnni/amx"


def int8_gemm_ceiling(
    rows: int = 384, inner: int = 384, outer: int = 1536, rounds: int = 20
) -> dict[str, float]:
    """GOPS of one ORT MatMul per precision on one core, at a feed-forward layer's shape: the most int8
    can buy over fp32 on this CPU for the matrix work, which is most of the cross-encoder's time."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.normal(size=(inner, outer)).astype(np.float32), "w")
    q_weight = numpy_helper.from_array(rng.integers(-127, 128, (inner, outer), dtype=np.int8), "w")
    scale = numpy_helper.from_array(np.array(0.01, np.float32), "scale")
    zero = numpy_helper.from_array(np.array(128, np.uint8), "zero")
    nodes = {
        "fp32": (helper.make_node("MatMul", ["x", "w"], ["y"]), [weight], TensorProto.FLOAT),
        "int8 (u8 x s8)": (
            helper.make_node(
                "MatMulIntegerToFloat", ["x", "w", "scale", "scale", "zero"], ["y"], domain="com.microsoft"
            ),
            [q_weight, scale, zero],
            TensorProto.UINT8,
        ),
    }
    feeds = {
        TensorProto.FLOAT: rng.normal(size=(rows, inner)).astype(np.float32),
        TensorProto.UINT8: rng.integers(0, 256, (rows, inner), dtype=np.uint8),
    }
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    products: list[tuple[str, Callable[[list[None]], object]]] = []
    for name, (node, initializers, input_type) in nodes.items():
        graph = helper.make_graph(
            [node],
            "gemm",
            [helper.make_tensor_value_info("x", input_type, [rows, inner])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, outer])],
            initializers,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
        )
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feed = {"x": feeds[input_type]}
        products.append((name, lambda _, session=session, feed=feed: session.run(None, feed)))
    products_per_second = pairs_per_second(products, [None], rounds, clock=time.thread_time)
    return {name: rate * 2 * rows * inner * outer / 1e9 for name, rate in products_per_second.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-repeats", type=int, default=10)
    args = parser.parse_args()
    threads = available_cores()
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {threads} cores")
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "standin"
        report = build_standin(model_dir)
        print(f"provisioning: {report.detail} {LABEL}")
        if not report.int8_verified:
            quantize_int8(model_dir, "per-row")
            print("  int8 re-quantised below for SPEED ONLY; the worker would not serve it")
        questions = bench_questions(bench_pairs(args.pairs))
        pairs = flat(questions)
        int8 = CrossEncoder(model_dir, threads, precision="int8")
        fp32 = CrossEncoder(model_dir, threads, precision="fp32")
        per_row_dir = scheme_dir(model_dir, "per-row", Path(tmp) / "per-row")
        weight_only_dir = scheme_dir(model_dir, "weight-only", Path(tmp) / "weight-only")
        alone = CrossEncoder(model_dir, threads, precision="int8", pairs_per_run=1).score_pairs(pairs[:64])
        shared = CrossEncoder(model_dir, threads, precision="int8", pairs_per_run=64).score_pairs(pairs[:64])
        moved = float(np.abs(shared - alone).max())
        print(f"served int8: max |logit in a run of 64 - logit alone| over 64 pairs = {moved:.2e}")
        torch_score = torch_baseline(Path(tmp) / "torch", threads)
        gap = float(np.abs(np.asarray(torch_score(pairs[:16])) - fp32.score_pairs(pairs[:16])).max())
        print(f"same model check: max |torch fp32 - onnx fp32| logit on 16 pairs = {gap:.2e}")
        int8_worker = MicroBatcher(int8.score_pairs, 64, 0.01, int8.batches_in_flight)
        fp32_worker = MicroBatcher(fp32.score_pairs, 64, 0.01, fp32.batches_in_flight)

        def runs_of(model: Path, size: int) -> Scorer:
            return CrossEncoder(model, threads, precision="int8", pairs_per_run=size).score_pairs

        served = f"{report.int8_scheme or 'per-row, unverified'}, runs of {int8.pairs_per_run}"
        auto = {
            precision: " <- auto" if report.served_precision == precision else "" for precision in MODEL_FILES
        }
        int8_name = f"worker int8 ({served}){auto['int8']}"
        fp32_name = f"worker fp32 (runs of {fp32.pairs_per_run}){auto['fp32']}"
        torch_name = f"{TORCH} (batches of {TORCH_BATCH})"
        rounds = f"best of {args.repeats} interleaved rounds"
        where = f"{len(pairs)} pairs, {threads} threads, {rounds} {LABEL}"
        service = [
            (int8_name, as_service(int8_worker)),
            (fp32_name, as_service(fp32_worker)),
            (f"{torch_name}, one call per question", per_question(torch_score)),
        ]
        rates = question_pairs_per_second(service, questions, args.repeats)
        print_rates(f"questions: {len(questions)} of 20-64 candidates, {where}", rates, service[-1][0])
        one_call: list[tuple[str, Scorer]] = [
            (int8_name, lambda p: int8_worker.submit(p).result()),
            *[(f"int8 per-row, sorted runs of {n}", runs_of(per_row_dir, n)) for n in (1, 4, 16)],
            ("int8 weight-only, sorted runs of 4", runs_of(weight_only_dir, 4)),
            (f"{torch_name}, all pairs sorted by length", torch_score),
        ]
        rates = pairs_per_second(one_call, pairs, args.repeats)
        print_rates(f"one call with every pair: {where}", rates, one_call[-1][0])
        single: list[tuple[str, Scorer]] = [
            (f"int8 ({served})", CrossEncoder(model_dir, 1, precision="int8").score_pairs),
            (f"fp32 (runs of {fp32.pairs_per_run})", CrossEncoder(model_dir, 1, "fp32").score_pairs),
            (f"{torch_name}, all pairs sorted by length", torch_baseline(Path(tmp) / "torch-1", 1)),
        ]
        rates = pairs_per_second(single, pairs, args.repeats, clock=time.thread_time)
        print_rates(f"per CPU-second, one call, 1 thread each, {rounds} {LABEL}", rates, single[-1][0])
        served_worker = int8_worker if report.served_precision == "int8" else fp32_worker
        print(f"\nlatency of one question through the worker's batcher ({report.served_precision}) {LABEL}")
        for size in (35, 60):
            p50, p95 = latency_ms(served_worker, size, args.latency_repeats)
            print(
                f"  {size} pairs: p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   ({args.latency_repeats} questions)"
            )
    gops = int8_gemm_ceiling()
    print(f"\nwhat this CPU allows int8 (one core, 384x384 by 384x1536; flags: {cpu_int8_flags()})")
    for name, rate in gops.items():
        print(f"  {name:<62} {rate:8.1f} GOPS  {rate / gops['fp32']:5.2f}x fp32")
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
