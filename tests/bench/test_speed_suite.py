"""The speed suite's script runs end to end on tiny sizes and prints its table.

Figures are not checked (timings belong to the bench, not to tests); what is checked is that the
sections ran on real parts (the packaged chitchat conversations, the product indexer, both
embedders) and reported what they measured. The reranker and question sections need the stand-in
cross-encoder and the whole local stack, too slow for a smoke test: they run in the bench itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from provisioning.calibration import CALIBRATION_TEXTS
from tests.conftest import REPO, require_embedder

SIZES = ("40", "90")


def tiny_beir_set(folder: Path) -> Path:
    """A BEIR-format set of a few documents (the bench's default, pyfaq, lives outside the repo)."""
    folder.mkdir()
    rows = [{"_id": f"doc{n}", "title": f"Doc {n}", "text": text} for n, text in enumerate(CALIBRATION_TEXTS)]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in rows))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "How do I read a file?"}))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdoc0\t1\n")
    return folder


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


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    require_embedder()
    cache = tmp_path_factory.mktemp("bench-cache")
    dataset = tiny_beir_set(cache / "beir")
    args = ("--only", "embedder,index", "--dataset", str(dataset), "--texts", "8", "--rounds", "1")
    return cache, run_suite(cache, *args, "--index-sizes", ",".join(SIZES), "--queries", "3")


def test_embedder_rows_compare_onnx_with_sentence_transformers_on_long_and_short_texts_and_gemm_ceiling(
    first_run: tuple[Path, list[str]],
) -> None:
    _, rows = first_run
    ratios = [r for r in rows if r.startswith("| embedder vs SentenceTransformer.encode")]
    cosine = next(r for r in rows if r.startswith("| embedder int8 vs fp32"))
    ceiling = [r for r in rows if r.startswith("| GEMM ceiling")]
    assert len(ratios) == 4, rows
    assert all(re.search(r"\| [\d.]+ texts/s \| [\d.]+ texts/s \| [\d.]+x \|", row) for row in ratios), ratios
    assert any("long passages" in row for row in ratios) and any("short sentences" in row for row in ratios)
    assert re.search(r"long min 0\.\d+ mean 0\.\d+, short min 0\.\d+", cosine), cosine
    gemm = r"\d+ GOPS int8 \| \d+ GOPS fp32 \| [\d.]+x \| .*int8: "
    assert ceiling and all(re.search(gemm, row) for row in ceiling), ceiling


def test_each_index_holds_at_least_its_size_and_reports_search_latency(
    first_run: tuple[Path, list[str]],
) -> None:
    _, rows = first_run
    table = "\n".join(rows)
    chunks = [int(n) for n in re.findall(r"\| index chitchat \d+: (\d+) chunks", table)]
    assert len(chunks) == 2 and chunks[0] >= int(SIZES[0]) and chunks[1] >= int(SIZES[1]), table
    assert all(f"| search at {n} chunks, p50 / p95 | " in table for n in chunks), table
    assert re.search(r"\| chitchat corpus \| \d+ real threads \(\d+ chunks\)", table), table


def test_a_second_run_reuses_the_cached_indexes(first_run: tuple[Path, list[str]]) -> None:
    cache, rows = first_run
    records = sorted(cache.glob("chitchat-*/store-*/build.json"))
    assert len(records) == 2
    stamps = [r.stat().st_mtime_ns for r in records]
    again = run_suite(cache, "--only", "index", "--index-sizes", ",".join(SIZES), "--queries", "2")
    assert [r.stat().st_mtime_ns for r in records] == stamps
    assert [r for r in again if r.startswith("| index")] == [r for r in rows if r.startswith("| index")]
