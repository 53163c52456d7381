"""``bench/retrieval_quality.py`` runs unchanged on any BEIR folder: here a small generated one.

Each query names a made-up word that only its gold document contains, so the keyword legs must put
that document first: BM25's nDCG@10 is exactly 1, and the full pipeline (which fuses BM25 and the
exact leg with dense) keeps it among the reranker's 35 candidates every time. Its place in the top
10 is not asserted: for a made-up word the dense scores are noise, and the fusion's lexical share
(1 - α = 0.2, chosen across real sets: docs/decisions/retrieval.md) lifts the gold document above
most of that noise, not all of it (19 of 20 here).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.bench.conftest import TOPICS, run_bench, table_row, write_beir
from tests.conftest import require_embedder

pytestmark = pytest.mark.integration


def test_quality_bench_scores_a_generated_beir_folder_and_reuses_its_index(tmp_path: Path) -> None:
    require_embedder()
    dataset, cache = tmp_path / "tiny-beir", tmp_path / "cache"
    write_beir(dataset)

    first = run_bench(cache, dataset)
    assert re.search(rf"indexed {len(TOPICS)} files, \d+ chunks, 0 failed", first)
    header = "| run | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | cand@35 | cand@60 | s/query | how |"
    assert header in first
    assert table_row(first, "BM25 only")[1:7] == ["1.000"] * 6
    assert float(table_row(first, "full pipeline")[2]) >= 0.9, "Recall@10 of the fused pipeline"
    assert table_row(first, "full pipeline")[5] == "1.000", "every gold document among 35 candidates"
    assert float(table_row(first, "whole-document fp32")[1]) > 0, "the fp32 reference row is scored"
    assert "not measurable: --no-hyde" in table_row(first, "+ HyDE (fusion)")[-1]
    assert "passes through" in table_row(first, "+ rerank (top 35)")[-1]

    second = run_bench(cache, dataset)
    assert "indexed" not in second, "the second run reuses the cached index"
    assert table_row(second, "BM25 only")[1:5] == table_row(first, "BM25 only")[1:5]


def test_quality_bench_prints_each_runs_mean_and_worst_set_over_the_sets_given(tmp_path: Path) -> None:
    require_embedder()
    easy, hard, cache = tmp_path / "easy", tmp_path / "hard", tmp_path / "cache"
    write_beir(easy)
    write_beir(hard)  # the same corpus, but every question's gold document is the wrong one
    qrels = "".join(f"q{n}\tdoc/{(n + 1) % len(TOPICS)}\t1\n" for n in range(len(TOPICS)))
    (hard / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)

    output = run_bench(cache, easy, hard)
    assert "| run | easy | hard | mean | worst |" in output
    bm25 = table_row(output, "BM25 only", after="across 2 sets")
    assert bm25[1] == "1.000" and float(bm25[2]) < 1.0
    assert float(bm25[3]) == pytest.approx((1.0 + float(bm25[2])) / 2, abs=0.001)
    assert bm25[4] == f"{bm25[2]} (hard)"
