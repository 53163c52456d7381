"""``hindsight repl`` driven through a real pseudo-terminal: start the stack, index, ask, reset, stop;
while the stack is up, ``ask --json`` and ``search --json`` as a script would call them (a Perplexity
thread's citation carrying its perplexity.ai link, in JSON and after ``path:line`` in the terminal).

The stack is the real local one (Redis, Celery workers, gateway as processes) on its own ports.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from shared.embedding import OnnxEmbedder
from shared.stores.lancedb_store import LanceDBStore
from testing.processes import free_port
from tests.conftest import REPO, models_dir, run_hindsight

pytestmark = pytest.mark.integration


def test_repl_menu_runs_the_whole_local_workflow(tmp_path: Path) -> None:
    data_dir, samples = tmp_path / "data", tmp_path / "samples"
    shutil.copytree(REPO / "samples", samples)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        PYTHONPATH=str(REPO), TERM="dumb", COLUMNS="200",
        HINDSIGHT_DATA_DIR=str(data_dir), HINDSIGHT_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
        HINDSIGHT_GATEWAY_PORT=str(port), HINDSIGHT_GATEWAY_URL=f"http://127.0.0.1:{port}",
        HINDSIGHT_MODELS_DIR=str(models_dir()),
    )  # fmt: skip
    repl = pexpect.spawn(
        sys.executable, ["-m", "cli.main", "repl"], cwd=str(REPO), env=env, encoding="utf-8", timeout=30
    )
    repl.logfile_read = (tmp_path / "repl.log").open("w")
    try:
        repl.expect("choose")
        repl.sendline("h")
        repl.expect("written answer whose")
        repl.expect("choose")

        repl.sendline("4")
        repl.expect("ready", timeout=150)
        repl.expect("choose")

        repl.sendline("2")
        repl.expect("folder to index")
        repl.sendline(str(samples))
        repl.expect(r"scanned 4: 4 new", timeout=120)
        repl.expect("choose")

        repl.sendline("What is my sourdough starter called?")  # not a menu key: it is asked
        repl.expect("citations", timeout=120)
        repl.expect(r"\[1\] ")
        repl.expect("choose")

        repl.sendline("How often is it fed?")  # a follow-up of the question before
        repl.expect(r"searched for: How often is it fed\? \(sourdough starter called\)", timeout=120)
        repl.expect("every Sunday")
        repl.expect("choose")
        repl.sendline("n")
        repl.expect("a new conversation")
        repl.expect("choose")

        _scripts_get_json(env, samples)

        repl.sendline("7")
        repl.expect(r"delete the index\?")
        repl.sendline("n")
        repl.expect("nothing deleted")
        assert (data_dir / "store").is_dir()
        repl.expect("choose")

        repl.sendline("5")
        repl.expect("stopped: ")
        repl.expect("choose")

        repl.sendline("7")
        repl.expect(r"delete the index\?")
        repl.sendline("y")
        repl.expect("deleted the index")
        emptied = LanceDBStore(data_dir / "store", OnnxEmbedder.dimension)  # reset empties it in place
        assert emptied.count_chunks() == 0 and emptied.manifest() == {}
        repl.expect("choose")

        repl.sendline("q")
        repl.expect(pexpect.EOF)
    finally:
        if repl.isalive():
            repl.terminate(force=True)
        _stop_stack(env)


def _scripts_get_json(env: dict[str, str], samples: Path) -> None:
    """``--json`` prints only JSON; the exact search finds a phrase a line break splits, and neighbour
    expansion never returns one passage twice."""
    answer = json.loads(
        run_hindsight(env, "ask", "--json", "What is my sourdough starter called?", timeout_s=120)
    )
    assert "Clint" in answer["markdown"] and answer["citations"]
    thread = samples / "research" / "Cross-encoder reranking (cross-encoder-reranking-XyZ).md"
    address = "https://www.perplexity.ai/search/cross-encoder-reranking-XyZ"
    question = "Why rerank retrieved passages with a cross-encoder?"
    reranking = json.loads(run_hindsight(env, "ask", "--json", question, timeout_s=120))
    assert {(c["source_uri"], c["source_url"]) for c in reranking["citations"]} >= {(str(thread), address)}
    printed = " ".join(run_hindsight(env, "ask", question, timeout_s=120).split())
    assert re.search(re.escape(f"{thread}:") + r"\d+ " + re.escape(address), printed), printed
    found = json.loads(run_hindsight(env, "search", "--json", "--mode", "exact", "rye flour", timeout_s=120))
    assert found["candidates"][0]["chunk"]["source_uri"] == str(samples / "notes" / "sourdough.md")
    status = " ".join(run_hindsight(env, "status", timeout_s=120).split())
    assert "documents │ 4" in status and f"{samples} — 4 documents, not watched" in status
    widened = json.loads(
        run_hindsight(env, "search", "--json", "--k-adjacent", "1", "cold retard hydration", timeout_s=120)
    )
    passages = [c["passage"] for c in widened["candidates"]]
    assert passages and len(passages) == len(set(passages))


def _stop_stack(env: dict[str, str]) -> None:
    """Whatever the test reached, stop the processes its stack started (by their pidfiles)."""
    subprocess.run(
        [sys.executable, "-m", "cli.main", "down"], cwd=REPO, env=env, capture_output=True, timeout=60
    )
