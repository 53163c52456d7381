"""The speed suite's script runs end to end on tiny sizes and prints its table.

Figures are not checked (timings belong to the bench, not to tests); what is checked is that each
section ran on real parts and reported what it measured.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, require_embedder


def run_suite(cache: Path, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "bench/speed_suite.py", "--cache-dir", str(cache), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if line.startswith("| ")]


def test_index_and_embedder_sections_print_sizes_ratios_and_search_latency(tmp_path: Path) -> None:
    require_embedder()
    rows = run_suite(
        tmp_path,
        *("--only", "embedder,index", "--texts", "8", "--rounds", "1", "--index-sizes", "40,90"),
        *("--queries", "3"),
    )
    embedder = next(r for r in rows if r.startswith("| OnnxEmbedder"))
    assert re.search(r"\| [\d.]+ texts/s \| [\d.]+ texts/s \| [\d.]+x \|", embedder), embedder
    sizes = [int(n) for n in re.findall(r"\| index chitchat \d+: (\d+) chunks", "\n".join(rows))]
    assert len(sizes) == 2 and sizes[0] >= 40 and sizes[1] >= 90, rows
    assert sum(r.startswith(f"| search at {n} chunks, p50 / p95 |") for r in rows for n in sizes) == 2
    corpus = next(r for r in rows if r.startswith("| chitchat corpus"))
    assert re.search(r"\d+ real conversations \(\d+ chunks\)", corpus), corpus


def test_second_run_reuses_the_cached_indexes(tmp_path: Path) -> None:
    require_embedder()
    args = ("--only", "index", "--index-sizes", "30", "--queries", "2")
    first = run_suite(tmp_path, *args)
    stores = sorted(tmp_path.glob("chitchat-*/store-30"))
    assert len(stores) == 1
    stamp = (stores[0] / "build.json").stat().st_mtime_ns
    second = run_suite(tmp_path, *args)
    assert (stores[0] / "build.json").stat().st_mtime_ns == stamp
    assert [r for r in first if r.startswith("| index")] == [r for r in second if r.startswith("| index")]
