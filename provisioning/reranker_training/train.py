"""Fine-tune the packaged all-MiniLM-L6-v2 as a cross-encoder on the training pairs.

    python -m provisioning.reranker_training.train --pairs DIR --init MINILM_DIR --out DIR \
        [--eval candidates.jsonl ...] [--epochs 2] [--max-minutes 30]

* Hard negatives come from the product's two legs: the embedder's MiniLM (mean-pooled cosine) and
  BM25 (k1 1.2, b 0.75) over every passage; each query keeps the passages both rank highest,
  except those of its own section.
* Each step scores, per query, its positive and ``--negatives`` of its hard negatives; the loss is
  the listwise softmax cross-entropy (the positive first) plus the pointwise binary cross-entropy,
  so a logit also says on its own whether a passage answers (the answerability threshold reads it).
* The word-embedding matrix stays as packaged (frozen): ``encoder-NN.safetensors`` hold every other
  weight in fp16 and ``provisioning.trained_reranker`` joins them again.
* ``--eval`` files (``bench/rerank_inputs.py``) are scored after each epoch: nDCG@10 of the fused
  order and of the reranked one, and the top logit of answerable and unanswerable questions.

Self-contained (torch, transformers, numpy, scikit-learn): it runs where the GPU is, and on a CPU
with ``--max-minutes`` as the bound.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import numpy as np
import torch

from provisioning.reranker_training.evaluation import evaluate, print_eval
from provisioning.reranker_training.mining import mine_negatives


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def save(model, out: Path, record: dict, part_bytes: int = 12_000_000) -> None:
    """Every weight but the word embeddings, in fp16, as ``encoder-NN.safetensors`` parts of at most
    ``part_bytes`` (files that small travel and diff well), and ``training.json``."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in model.state_dict().items():
        if "word_embeddings" in name:
            continue
        half = tensor.detach().to(torch.float16).cpu().contiguous()
        if size + half.numel() * 2 > part_bytes and parts[-1]:
            parts.append({})
            size = 0
        parts[-1][name] = half
        size += half.numel() * 2
    for number, part in enumerate(parts):
        save_file(part, str(out / f"encoder-{number:02d}.safetensors"))
    (out / "training.json").write_text(json.dumps(record, indent=1))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--init", type=Path, required=True, help="the packaged all-MiniLM-L6-v2 folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--eval", type=Path, action="append", default=[])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--queries-per-step", type=int, default=32)
    parser.add_argument("--negatives", type=int, default=7)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--max-len", type=int, default=384)
    parser.add_argument("--max-minutes", type=float, default=None)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--mined", type=Path, default=None, help="hard negatives kept here (reused if present)"
    )
    return parser.parse_args(argv)


class Trainer:
    """The model, its optimiser and schedule, and one step: a query group's listwise + pointwise loss."""

    def __init__(self, args: argparse.Namespace, steps: int, device: torch.device) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.args, self.device = args, device
        self.tokenizer = AutoTokenizer.from_pretrained(str(args.init))
        model = AutoModelForSequenceClassification.from_pretrained(str(args.init), num_labels=1)
        self.model = model.to(device)
        self.model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
        trained = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
        warmup = max(1, steps // 10)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
        )

    def step(self, pairs: list[tuple[str, str]]) -> float:
        """``pairs``: groups of (query, positive) then its negatives, ``1 + negatives`` each."""
        group = 1 + self.args.negatives
        feeds = self.tokenizer(
            [q for q, _ in pairs],
            [p for _, p in pairs],
            padding=True,
            truncation="only_second",
            max_length=self.args.max_len,
            return_tensors="pt",
        ).to(self.device)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            logits = self.model(**feeds).logits.float().view(-1, group)
        target = torch.zeros_like(logits)
        target[:, 0] = 1.0
        first = torch.zeros(len(logits), dtype=torch.long, device=self.device)
        loss = torch.nn.functional.cross_entropy(logits, first)
        loss = loss + torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad()
        return float(loss.detach())


def group_pairs(
    batch: list[int], queries: list[dict], passages: list[dict], hard: list[list[int]], negatives: int
) -> list[tuple[str, str]]:
    """Each query's positive, then ``negatives`` drawn from its hardest ``4 × negatives`` (random
    passages fill a short list)."""
    pairs = []
    for qi in batch:
        pool = hard[qi][: 4 * negatives]
        drawn = random.sample(pool, min(negatives, len(pool)))
        while len(drawn) < negatives:
            drawn.append(random.randrange(len(passages)))
        query = queries[qi]["query"]
        pairs += [(query, passages[pid]["text"]) for pid in [queries[qi]["positive"], *drawn]]
    return pairs


def load_or_mine(args: argparse.Namespace, queries: list[dict], passages: list[dict], device: torch.device):
    if args.mined is not None and args.mined.exists():
        return json.loads(args.mined.read_text())
    hard = mine_negatives(queries, passages, args.init, device)
    if args.mined is not None:
        args.mined.write_text(json.dumps(hard))
    return hard


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = pick_device()
    passages = read_jsonl(args.pairs / "passages.jsonl")
    queries = read_jsonl(args.pairs / "queries.jsonl")
    eval_rows = [row for path in args.eval for row in read_jsonl(path)]
    hard = load_or_mine(args, queries, passages, device)
    steps_per_epoch = math.ceil(len(queries) / args.queries_per_step)
    trainer = Trainer(args, steps_per_epoch * args.epochs, device)
    if eval_rows:
        print_eval(0, evaluate(trainer.model, trainer.tokenizer, eval_rows, device, args.max_len))
    started = time.perf_counter()
    record: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "device": str(device), "epochs": []}
    out_of_time = False
    for epoch in range(1, args.epochs + 1):
        order = random.sample(range(len(queries)), len(queries))
        losses = []
        for step in range(steps_per_epoch):
            batch = order[step * args.queries_per_step : (step + 1) * args.queries_per_step]
            losses.append(trainer.step(group_pairs(batch, queries, passages, hard, args.negatives)))
            elapsed = time.perf_counter() - started
            if step % 100 == 0:
                loss = np.mean(losses[-100:])
                print(
                    f"epoch {epoch} step {step}/{steps_per_epoch} loss {loss:.3f} {elapsed:.0f} s", flush=True
                )
            out_of_time = bool(args.max_minutes and elapsed > 60 * args.max_minutes)
            if out_of_time:
                break
        entry: dict = {"epoch": epoch, "steps": len(losses), "loss": float(np.mean(losses)), "s": elapsed}
        if eval_rows:
            entry["eval"] = evaluate(trainer.model, trainer.tokenizer, eval_rows, device, args.max_len)
            print_eval(epoch, entry["eval"])
        record["epochs"].append(entry)
        if out_of_time:
            break
    record["train_s"] = time.perf_counter() - started
    save(trainer.model, args.out, record)
    print(f"saved to {args.out} after {record['train_s']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
