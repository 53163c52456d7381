"""Fine-tune the packaged all-MiniLM-L6-v2 as a cross-encoder on the training pairs.

    python -m provisioning.reranker_training.train --pairs DIR --init MINILM_DIR --out DIR \
        [--eval candidates.jsonl ...] [--epochs 2] [--max-minutes 30]

* Hard negatives come from the product's two legs: the embedder's MiniLM (mean-pooled cosine) and
  BM25 (k1 1.2, b 0.75) over every passage; each query keeps the passages both rank highest,
  except those of its own section.
* Each step scores, per query, its positive and ``--negatives`` of its hard negatives; the loss is
  the listwise softmax cross-entropy (the positive first) plus the pointwise binary cross-entropy,
  so a logit also says on its own whether a passage answers (the answerability threshold reads it).
* The word-embedding matrix stays as packaged (frozen): ``encoder.safetensors`` holds every other
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

MINE_DEPTH = 40


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def embed(texts: list[str], tokenizer, encoder, device: torch.device, batch: int = 256) -> torch.Tensor:
    """Unit mean-pooled MiniLM vectors (the embedder's rule), in fp32 on ``device``."""
    out = []
    encoder.eval()
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        for start in range(0, len(texts), batch):
            feeds = tokenizer(
                texts[start : start + batch], padding=True, truncation=True, max_length=256, return_tensors="pt"
            ).to(device)
            hidden = encoder(**feeds).last_hidden_state.float()
            mask = feeds["attention_mask"].unsqueeze(-1).float()
            out.append(torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1))
    return torch.cat(out)


def dense_top(queries: list[str], passages: list[str], init: Path, device: torch.device) -> np.ndarray:
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(init))
    encoder = AutoModel.from_pretrained(str(init)).to(device)
    p = embed(passages, tokenizer, encoder, device)
    q = embed(queries, tokenizer, encoder, device)
    tops = [torch.topk(q[s : s + 1024] @ p.T, MINE_DEPTH).indices.cpu() for s in range(0, len(q), 1024)]
    return torch.cat(tops).numpy()


def bm25_top(queries: list[str], passages: list[str], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(token_pattern=r"(?u)\b\w\w+\b", dtype=np.float32)
    tf = vectorizer.fit_transform(passages).tocsr()
    lengths = np.asarray(tf.sum(axis=1)).ravel()
    df = np.bincount(tf.indices, minlength=tf.shape[1])
    idf = np.log(1 + (len(passages) - df + 0.5) / (df + 0.5)).astype(np.float32)
    rows = np.repeat(np.arange(tf.shape[0]), np.diff(tf.indptr))
    denominators = tf.data + k1 * (1 - b + b * lengths[rows] / lengths.mean())
    tf.data = (tf.data * (k1 + 1) / denominators * idf[tf.indices]).astype(np.float32)
    asked = vectorizer.transform(queries).tocsr()
    asked.data[:] = 1.0
    weights = tf.T.tocsr()
    tops = []
    for start in range(0, asked.shape[0], 512):
        scores = (asked[start : start + 512] @ weights).toarray()
        top = np.argpartition(-scores, MINE_DEPTH, axis=1)[:, :MINE_DEPTH]
        order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
        tops.append(np.take_along_axis(top, order, axis=1))
    return np.vstack(tops)


def mine_negatives(queries: list[dict], passages: list[dict], init: Path, device: torch.device) -> list[list[int]]:
    """For each query, passages the legs rank highest (interleaved), its own section's left out."""
    texts = [p["text"] for p in passages]
    asked = [q["query"] for q in queries]
    started = time.perf_counter()
    dense = dense_top(asked, texts, init, device)
    lexical = bm25_top(asked, texts)
    print(f"mined {len(asked)} queries over {len(texts)} passages in {time.perf_counter() - started:.0f} s")
    hard = []
    for query, d_row, l_row in zip(queries, dense, lexical, strict=True):
        seen: list[int] = []
        for pid in (int(i) for pair in zip(d_row, l_row, strict=True) for i in pair):
            if passages[pid]["section"] != query["section"] and pid not in seen:
                seen.append(pid)
        hard.append(seen)
    return hard


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    gains = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:10]))
    return gains / ideal if ideal else 0.0


def score_pairs(model, tokenizer, pairs: list[tuple[str, str]], device, max_len: int, batch: int = 256) -> np.ndarray:
    model.eval()
    out = []
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        for start in range(0, len(pairs), batch):
            chunk = pairs[start : start + batch]
            feeds = tokenizer(
                [q for q, _ in chunk], [p for _, p in chunk], padding=True, truncation="only_second",
                max_length=max_len, return_tensors="pt",
            ).to(device)
            out.append(model(**feeds).logits.float().squeeze(-1).cpu())
    model.train()
    return torch.cat(out).numpy() if out else np.zeros(0)


def evaluate(model, tokenizer, rows: list[dict], device, max_len: int) -> dict:
    """nDCG@10 fused vs reranked per set, and the top logit of answerable / unanswerable questions."""
    pairs = [(row["query"], c["text"]) for row in rows for c in row["head"]]
    scores = score_pairs(model, tokenizer, pairs, device, max_len)
    report: dict[str, dict] = {}
    at = 0
    for row in rows:
        head = row["head"]
        logits = scores[at : at + len(head)]
        at += len(head)
        entry = report.setdefault(row["set"], {"fused": [], "reranked": [], "top_answerable": [], "top_foreign": []})
        if not row["answerable"]:
            entry["top_foreign"].append(float(logits.max()) if len(logits) else -99.0)
            continue
        fused = [c["doc"] for c in head] + row["tail"]
        order = [head[i]["doc"] for i in np.argsort(-logits, kind="stable")] + row["tail"]
        entry["fused"].append(ndcg10(list(dict.fromkeys(fused)), row["qrels"]))
        entry["reranked"].append(ndcg10(list(dict.fromkeys(order)), row["qrels"]))
        entry["top_answerable"].append(float(logits.max()) if len(logits) else -99.0)
    return {
        name: {
            "fused": float(np.mean(e["fused"])),
            "reranked": float(np.mean(e["reranked"])),
            "top_answerable": e["top_answerable"],
            "top_foreign": e["top_foreign"],
        }
        for name, e in report.items()
    }


def print_eval(epoch: int, report: dict) -> None:
    for name, e in report.items():
        print(f"epoch {epoch} {name}: fused {e['fused']:.3f} reranked {e['reranked']:.3f}")
    means = [np.mean([e[k] for e in report.values()]) for k in ("fused", "reranked")]
    print(f"epoch {epoch} mean: fused {means[0]:.3f} reranked {means[1]:.3f}", flush=True)


def save(model, out: Path, record: dict) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    state = {
        name: tensor.detach().to(torch.float16).cpu().contiguous()
        for name, tensor in model.state_dict().items()
        if "word_embeddings" not in name
    }
    save_file(state, str(out / "encoder.safetensors"))
    (out / "training.json").write_text(json.dumps(record, indent=1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--init", type=Path, required=True, help="the packaged all-MiniLM-L6-v2 folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--eval", type=Path, action="append", default=[])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--queries-per-step", type=int, default=32)
    parser.add_argument("--negatives", type=int, default=7)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--max-len", type=int, default=320)
    parser.add_argument("--max-minutes", type=float, default=None)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = pick_device()
    passages = read_jsonl(args.pairs / "passages.jsonl")
    queries = read_jsonl(args.pairs / "queries.jsonl")
    eval_rows = [row for path in args.eval for row in read_jsonl(path)]
    hard = mine_negatives(queries, passages, args.init, device)
    tokenizer = AutoTokenizer.from_pretrained(str(args.init))
    model = AutoModelForSequenceClassification.from_pretrained(str(args.init), num_labels=1).to(device)
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    if eval_rows:
        print_eval(0, evaluate(model, tokenizer, eval_rows, device, args.max_len))
    steps_per_epoch = math.ceil(len(queries) / args.queries_per_step)
    total = steps_per_epoch * args.epochs
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01)
    warmup = max(1, total // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup)))
    )
    started = time.perf_counter()
    record: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "device": str(device), "epochs": []}
    group = 1 + args.negatives
    stopped = False
    for epoch in range(1, args.epochs + 1):
        order = list(range(len(queries)))
        random.shuffle(order)
        losses = []
        for step in range(steps_per_epoch):
            batch = order[step * args.queries_per_step : (step + 1) * args.queries_per_step]
            pairs = []
            for qi in batch:
                pool = hard[qi][: 4 * args.negatives]
                negatives = random.sample(pool, min(args.negatives, len(pool)))
                while len(negatives) < args.negatives:
                    negatives.append(random.randrange(len(passages)))
                pairs += [(queries[qi]["query"], passages[pid]["text"]) for pid in [queries[qi]["positive"], *negatives]]
            feeds = tokenizer(
                [q for q, _ in pairs], [p for _, p in pairs], padding=True, truncation="only_second",
                max_length=args.max_len, return_tensors="pt",
            ).to(device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(**feeds).logits.float().view(-1, group)
            target = torch.zeros_like(logits)
            target[:, 0] = 1.0
            listwise = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long, device=device))
            pointwise = torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
            loss = listwise + pointwise
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(float(loss))
            if step % 100 == 0:
                print(f"epoch {epoch} step {step}/{steps_per_epoch} loss {np.mean(losses[-100:]):.3f} "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
            if args.max_minutes and time.perf_counter() - started > 60 * args.max_minutes:
                stopped = True
                break
        entry: dict = {"epoch": epoch, "loss": float(np.mean(losses)), "s": time.perf_counter() - started}
        if eval_rows:
            report = evaluate(model, tokenizer, eval_rows, device, args.max_len)
            print_eval(epoch, report)
            entry["eval"] = report
        record["epochs"].append(entry)
        if stopped:
            break
    record["train_s"] = time.perf_counter() - started
    save(model, args.out, record)
    print(f"saved to {args.out} after {record['train_s']:.0f} s")


if __name__ == "__main__":
    main()
