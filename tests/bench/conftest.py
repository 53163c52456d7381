"""A generated BEIR folder (each query's gold document holds a made-up word no other has) and
``bench/retrieval_quality.py`` run on it as bench/README.md runs it, for the bench's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

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


def run_bench(cache: Path, *datasets: Path) -> str:
    command = [sys.executable, "bench/retrieval_quality.py", *map(str, datasets), "--cache-dir", str(cache)]
    command.append("--no-hyde")
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # as bench/README.md runs it
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def table_row(output: str, name: str, after: str = "") -> list[str]:
    lines = output[output.index(after) :].splitlines()
    line = next(line for line in lines if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]
