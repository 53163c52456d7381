"""``bench/retrieval_sweep.py`` applies the product's rules to dumped legs: its product rows must be
what ``bench/retrieval_quality.py`` measures through the retriever itself, on the same cached index.

Two generated sets over one corpus: one whose questions name their gold document's made-up word, one
whose gold documents are all the wrong ones, so the scores are not all 1 and agreement means
something.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.test_retrieval_quality import TOPICS, run_bench, table_row, write_beir
from tests.conftest import REPO, require_embedder

pytestmark = pytest.mark.integration


def run_sweep(cache: Path, *datasets: Path) -> str:
    command = [sys.executable, "bench/retrieval_sweep.py", *map(str, datasets), "--cache-dir", str(cache)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_sweeps_product_rows_match_the_quality_bench_on_the_same_index(tmp_path: Path) -> None:
    require_embedder()
    easy, hard, cache = tmp_path / "easy", tmp_path / "hard", tmp_path / "cache"
    write_beir(easy)
    write_beir(hard)
    qrels = "".join(f"q{n}\tdoc/{(n + 1) % len(TOPICS)}\t1\n" for n in range(len(TOPICS)))
    (hard / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)

    quality = run_bench(cache, easy, hard)
    sweep = run_sweep(cache, easy, hard)
    assert "indexed" not in sweep, "the sweep dumps the legs of the index the quality bench built"

    def sweep_row(prefix: str) -> list[str]:
        line = next(line for line in sweep.splitlines() if line.startswith(f"| {prefix}"))
        return [cell.strip() for cell in line.strip("|").split("|")]

    across = "across 2 sets"
    assert sweep_row("the product's (α")[1:3] == table_row(quality, "full pipeline", after=across)[1:3]
    assert sweep_row("the product's leg")[1:3] == table_row(quality, "dense only", after=across)[1:3]
    reference = table_row(quality, "whole-document fp32", after=across)[1:3]
    assert sweep_row("whole-document fp32")[1:3] == reference
    assert "chosen per held-out set: easy" in sweep
