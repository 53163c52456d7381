"""Calibrate the cross-encoder's cuts on the reranker's inputs of several sets, each judged held out.

Run: ``PYTHONPATH=. python bench/answerability.py inputs.jsonl [--model DIR] [--write training.json]``

``inputs.jsonl`` is ``bench/rerank_inputs.py``'s file: each set's own questions (answerable) and
another set's questions asked of its corpus (no passage answers them). The provisioned model
(``--model``, default the settings' reranker folder) scores every question's candidates; a question
is refused when its best logit is under the answerability cut. The cut is the highest one that
refuses at most ``MAX_ANSWERABLE_REFUSED`` of the answerable questions of *every* set; each set's
row is scored with the cut chosen on the other sets alone, so no row is tuned on itself. The keep
cut (what the reranker passes to synthesis) is the logit that keeps the gold passage of
``KEEP_RECALL`` of the answerable questions whose gold was among the candidates. ``--write`` records
both cuts in a ``training.json`` (``provisioning.trained_reranker`` copies them into the model's
provenance).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from services.reranker.cross_encoder import CrossEncoder
from shared.settings import Settings

MAX_ANSWERABLE_REFUSED = 0.03
KEEP_RECALL = 0.98


def score_rows(rows: list[dict], encoder: CrossEncoder) -> list[np.ndarray]:
    return [encoder.score(row["query"], [c["text"] for c in row["head"]]) for row in rows]


def tops(scored: list[tuple[dict, np.ndarray]], name: str, answerable: bool) -> np.ndarray:
    """The best logit of each question of one set, answerable or asked of the wrong corpus."""
    return np.array(
        [scores.max() for row, scores in scored if row["set"] == name and row["answerable"] == answerable]
    )


def gold_logit(row: dict, scores: np.ndarray) -> float | None:
    """The best logit of a judged-relevant candidate, None when none is among the candidates."""
    golden = [float(s) for c, s in zip(row["head"], scores, strict=True) if row["qrels"].get(c["doc"], 0) > 0]
    return max(golden) if golden else None


def answerable_cut(tops_by_set: dict[str, np.ndarray]) -> float:
    """The highest cut refusing at most MAX_ANSWERABLE_REFUSED of every set's answerable questions."""
    return float(min(np.quantile(tops, MAX_ANSWERABLE_REFUSED) for tops in tops_by_set.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", type=Path)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--write", type=Path, default=None, help="a training.json to record the cuts in")
    args = parser.parse_args()
    settings = Settings()
    encoder = CrossEncoder(args.model or settings.reranker_dir, settings.embedding.onnx_threads)
    rows = [json.loads(line) for line in args.inputs.read_text().splitlines() if line.strip()]
    logits = score_rows(rows, encoder)
    sets = sorted({row["set"] for row in rows})
    scored = list(zip(rows, logits, strict=True))
    answerable = {s: tops(scored, s, answerable=True) for s in sets}
    foreign = {s: tops(scored, s, answerable=False) for s in sets}
    gold = np.array(
        [best_gold for row, scores in scored if (best_gold := gold_logit(row, scores)) is not None]
    )
    cut = answerable_cut(answerable)
    keep = float(np.quantile(gold, 1 - KEEP_RECALL))
    print(f"model: {encoder.name}\n")
    print("| set | answerable refused | unanswerable refused | held-out cut |")
    print("|---|---|---|---|")
    for s in sets:
        held_out = answerable_cut({o: t for o, t in answerable.items() if o != s})
        print(
            f"| {s} | {np.mean(answerable[s] < held_out):.3f} | {np.mean(foreign[s] < held_out):.3f} "
            f"| {held_out:.2f} |"
        )
    print(f"\nanswerability cut on all sets: {cut:.3f}; keep cut: {keep:.3f} (gold kept {KEEP_RECALL:.0%})")
    if args.write:
        record = json.loads(args.write.read_text())
        record.update(answerable_logit=round(cut, 3), keep_logit=round(keep, 3))
        args.write.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
