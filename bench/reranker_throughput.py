"""Pairs/s of the reranker worker's scoring path vs sentence_transformers.CrossEncoder (PyTorch fp32).

Same model, same pairs, same run, same thread count. Offline the model is the stand-in built from
the packaged MiniLM-L6 weights (same architecture as ms-marco-MiniLM-L-6-v2: speed carries over,
scores do not); every figure printed says so.

    PYTHONPATH=. python bench/reranker_throughput.py --pairs 256 --repeats 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from services.reranker.batcher import MicroBatcher
from services.reranker.cross_encoder import MODEL_FILES, CrossEncoder
from services.reranker.provision import HEAD_FIT_TEXTS, build_standin, fitted_head
from shared.model_prep import CALIBRATION_TEXTS, packaged_minilm_dir
from shared.onnx_runtime import available_cores, quantize_int8_per_channel

TORCH = "sentence_transformers.CrossEncoder torch fp32 (batch 64)"
LABEL = "[offline stand-in: MiniLM-L6 weights, fitted head; speed carries over, scores do not]"


def bench_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """Questions against passages of 1-12 sentences (~15-250 tokens), like expanded chunks."""
    rng = random.Random(seed)
    sentences = [text for pair in HEAD_FIT_TEXTS for text in pair] + CALIBRATION_TEXTS
    questions = [question for question, _ in HEAD_FIT_TEXTS]
    return [
        (rng.choice(questions), " ".join(rng.choices(sentences, k=rng.randint(1, 12)))) for _ in range(count)
    ]


def pairs_per_second(
    score: Callable[[list[tuple[str, str]]], object], pairs: list[tuple[str, str]], repeats: int
) -> float:
    score(pairs[:8])
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        score(pairs)
        best = min(best, time.perf_counter() - start)
    return len(pairs) / best


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
        pairs, batch_size=64, activation_fn=identity, show_progress_bar=False
    )


def padded(encoder: CrossEncoder) -> Callable[[list[tuple[str, str]]], np.ndarray]:
    """The design the worker rejected: length-sorted batches of 64, each padded to its longest pair."""

    def score(pairs: list[tuple[str, str]]) -> np.ndarray:
        encodings = encoder.tokenize(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        logits = np.zeros(len(pairs), dtype=np.float32)
        for start in range(0, len(order), 64):
            batch = order[start : start + 64]
            logits[batch] = encoder.run([encodings[i] for i in batch])
        return logits

    return score


def latency_ms(batcher: MicroBatcher, size: int, repeats: int) -> tuple[float, float]:
    samples = []
    for seed in range(repeats):
        pairs = bench_pairs(size, seed=100 + seed)
        start = time.perf_counter()
        batcher.submit(pairs).result()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-repeats", type=int, default=10)
    args = parser.parse_args()
    threads = available_cores()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "standin"
        report = build_standin(model_dir)
        print(f"provisioning: {report.detail} {LABEL}")
        if not report.int8_verified:
            quantize_int8_per_channel(model_dir / MODEL_FILES["fp32"], model_dir / MODEL_FILES["int8"])
            print("  int8 re-quantised below for SPEED ONLY; the worker would not serve it")
        pairs = bench_pairs(args.pairs)
        int8 = CrossEncoder(model_dir, threads, precision="int8")
        fp32 = CrossEncoder(model_dir, threads, precision="fp32")
        torch_score = torch_baseline(Path(tmp) / "torch", threads)
        gap = float(np.abs(np.asarray(torch_score(pairs[:16])) - fp32.score_pairs(pairs[:16])).max())
        print(f"same model check: max |torch fp32 - onnx fp32| logit on 16 pairs = {gap:.2e}")
        int8_worker = MicroBatcher(int8.score_pairs, batch_size=64, max_wait_s=0.01)
        fp32_worker = MicroBatcher(fp32.score_pairs, batch_size=64, max_wait_s=0.01)
        contenders: list[tuple[str, Callable[[list[tuple[str, str]]], object]]] = [
            (
                "worker int8: batcher, batches of 64, one pair per run",
                lambda p: int8_worker.submit(p).result(),
            ),
            (
                "worker fp32: batcher, batches of 64, one pair per run",
                lambda p: fp32_worker.submit(p).result(),
            ),
            ("int8 length-sorted batches of 64 padded to longest (rejected)", padded(int8)),
            ("fp32 length-sorted batches of 64 padded to longest (rejected)", padded(fp32)),
            (TORCH, torch_score),
        ]
        rates = {name: pairs_per_second(score, pairs, args.repeats) for name, score in contenders}
        baseline = rates[TORCH]
        print(f"\nthroughput, {len(pairs)} pairs, {threads} threads, best of {args.repeats} {LABEL}")
        for name, rate in rates.items():
            print(f"  {name:<66} {rate:8.1f} pairs/s  {rate / baseline:5.2f}x torch")
        print(f"\nlatency of one question through the worker's batcher (int8) {LABEL}")
        for size in (35, 60):
            p50, p95 = latency_ms(int8_worker, size, args.latency_repeats)
            print(
                f"  {size} pairs: p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   ({args.latency_repeats} questions)"
            )


if __name__ == "__main__":
    main()
