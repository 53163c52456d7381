"""Hard negatives for the training queries, mined by the product's two legs.

The dense leg is the embedder's rule (the packaged MiniLM, mean-pooled, unit length, cosine); the
lexical leg is BM25 (k1 1.2, b 0.75) over the passages' words. Each query keeps the passages both
rank highest, interleaved, except those of its own section (which may answer it too).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

MINE_DEPTH = 40


def embed(texts: list[str], tokenizer, encoder, device: torch.device, batch: int = 256) -> torch.Tensor:
    """Unit mean-pooled MiniLM vectors (the embedder's rule), in fp32 on ``device``."""
    out = []
    encoder.eval()
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        for start in range(0, len(texts), batch):
            feeds = tokenizer(
                texts[start : start + batch],
                padding=True,
                truncation=True,
                max_length=256,
                return_tensors="pt",
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


def mine_negatives(
    queries: list[dict], passages: list[dict], init: Path, device: torch.device
) -> list[list[int]]:
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
