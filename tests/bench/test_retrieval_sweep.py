"""``bench/retrieval_sweep.py`` applies the product's rules to dumped legs: its product rows must be
what ``bench/retrieval_quality.py`` measures through the retriever itself, on the same cached index,
and ``bench/fusion_ceiling.py`` starts from those same rows.

Two generated sets over one corpus: one whose questions name their gold document's made-up word, one
whose gold documents are all the wrong ones, so the scores are not all 1 and agreement means
something.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bench.conftest import TOPICS, run_bench, table_row, write_beir
from tests.conftest import REPO, require_embedder

pytestmark = pytest.mark.integration


def run_script(script: str, cache: Path, *datasets: Path) -> str:
    command = [sys.executable, script, *map(str, datasets), "--cache-dir", str(cache)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@dataclass
class Built:
    cache: Path
    sets: tuple[Path, Path]
    quality: str  # bench/retrieval_quality.py's output, which built the index
    sweep: str  # bench/retrieval_sweep.py's output on the same cache


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    require_embedder()
    root = tmp_path_factory.mktemp("sweep")
    easy, hard, cache = root / "easy", root / "hard", root / "cache"
    write_beir(easy)
    write_beir(hard)
    qrels = "".join(f"q{n}\tdoc/{(n + 1) % len(TOPICS)}\t1\n" for n in range(len(TOPICS)))
    (hard / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    quality = run_bench(cache, easy, hard)
    sweep = run_script("bench/retrieval_sweep.py", cache, easy, hard)
    return Built(cache, (easy, hard), quality, sweep)


def row(output: str, prefix: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith(f"| {prefix}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_sweeps_product_rows_match_the_quality_bench_on_the_same_index(built: Built) -> None:
    sweep, quality = built.sweep, built.quality
    assert "indexed" not in sweep, "the sweep dumps the legs of the index the quality bench built"
    across = "across 2 sets"
    assert row(sweep, "the product's (α")[1:3] == table_row(quality, "full pipeline", after=across)[1:3]
    assert row(sweep, "the product's leg")[1:3] == table_row(quality, "dense only", after=across)[1:3]
    reference = table_row(quality, "whole-document fp32", after=across)[1:3]
    assert row(sweep, "whole-document fp32")[1:3] == reference
    assert "chosen per held-out set: easy" in sweep


def test_the_ceiling_bench_starts_from_the_sweeps_rows_and_bounds_them_by_the_hindsight_alpha(
    built: Built,
) -> None:
    ceiling = run_script("bench/fusion_ceiling.py", built.cache, *built.sets)
    assert "indexed" not in ceiling
    assert row(ceiling, "the product's dense leg")[1:3] == row(built.sweep, "the product's leg")[1:3]
    fusion = row(ceiling, "the product's fusion")
    assert fusion[1:3] == row(built.sweep, "the product's (α")[1:3]
    oracle = row(ceiling, "α per question in hindsight")
    assert all(float(o) >= float(f) for o, f in zip(oracle[1:3], fusion[1:3], strict=True))
    for label in ("every candidate scored", "dense feedback", "learned linear, held out: all features"):
        assert all(0.0 <= float(cell) <= 1.0 for cell in row(ceiling, label)[1:3]), label
