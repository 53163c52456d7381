"""Score a cross-encoder on the reranker's inputs of the evaluation sets (``bench/rerank_inputs.py``):
nDCG@10 of the fused order and of the reranked one, and the best logit of answerable questions and of
questions the corpus cannot answer."""

from __future__ import annotations

import math

import numpy as np
import torch


def ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    gains = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(relevant.values(), reverse=True)[:10]))
    return gains / ideal if ideal else 0.0


def score_pairs(
    model, tokenizer, pairs: list[tuple[str, str]], device, max_len: int, batch: int = 256
) -> np.ndarray:
    model.eval()
    out = []
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        for start in range(0, len(pairs), batch):
            chunk = pairs[start : start + batch]
            feeds = tokenizer(
                [q for q, _ in chunk],
                [p for _, p in chunk],
                padding=True,
                truncation="only_second",
                max_length=max_len,
                return_tensors="pt",
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
        entry = report.setdefault(
            row["set"], {"fused": [], "reranked": [], "top_answerable": [], "top_foreign": []}
        )
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
