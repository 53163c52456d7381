"""``bench/retrieval_quality.py`` runs unchanged on any BEIR folder: here a small generated one.

Each query names a made-up word that only its gold document contains, so the keyword legs must put
that document first: BM25's nDCG@10 is exactly 1 and the full pipeline (which fuses BM25 and the
exact leg with dense) ranks it in its top 10 every time.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, require_embedder

pytestmark = pytest.mark.integration

TOPICS = [
    "sourdough starters", "tidal energy", "bicycle gears", "medieval maps", "honeybee swarms",
    "glacier retreat", "jazz harmony", "paper folding", "volcanic soil", "lighthouse lenses",
    "tea fermentation", "chess openings", "coral bleaching", "rope knots", "solar sails",
    "bread ovens", "river deltas", "violin varnish", "desert lichens", "clock escapements",
]  # fmt: skip


def word(n: int) -> str:
    return "zq" + "".join("bcdfghjklm"[int(d)] for d in f"{n:03d}") + "ix"


def write_beir(folder: Path) -> None:
    folder.mkdir()
    corpus = [
        {
            "_id": f"doc/{n}",
            "title": f"Notes on {topic}",
            "text": f"My notes on {topic}. The codename for this project was {word(n)}. "
            f"It took three weekends to understand {topic} well enough to explain it.",
        }
        for n, topic in enumerate(TOPICS)
    ]
    queries = [{"_id": f"q{n}", "text": f"What was {word(n)} about?"} for n in range(len(TOPICS))]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in queries))
    qrels = "".join(f"q{n}\tdoc/{n}\t1\n" for n in range(len(TOPICS)))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)


def run_bench(dataset: Path, cache: Path) -> str:
    command = [sys.executable, "bench/retrieval_quality.py", str(dataset), "--cache-dir", str(cache)]
    command.append("--no-hyde")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def table_row(output: str, name: str) -> list[str]:
    line = next(line for line in output.splitlines() if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_quality_bench_scores_a_generated_beir_folder_and_reuses_its_index(tmp_path: Path) -> None:
    require_embedder()
    dataset, cache = tmp_path / "tiny-beir", tmp_path / "cache"
    write_beir(dataset)

    first = run_bench(dataset, cache)
    assert re.search(rf"indexed {len(TOPICS)} files, \d+ chunks, 0 failed", first)
    assert "| run | nDCG@10 | Recall@10 | Recall@100 | MRR@10 | s/query | how |" in first
    assert table_row(first, "BM25 only")[1:5] == ["1.000", "1.000", "1.000", "1.000"]
    assert table_row(first, "full pipeline")[2] == "1.000", "Recall@10 of the fused pipeline"
    assert "not measurable: --no-hyde" in table_row(first, "+ HyDE (fusion)")[-1]
    assert "passes through" in table_row(first, "+ rerank (top 35)")[-1]

    second = run_bench(dataset, cache)
    assert "indexed" not in second, "the second run reuses the cached index"
    assert table_row(second, "BM25 only")[1:5] == table_row(first, "BM25 only")[1:5]
