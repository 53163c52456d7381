"""Chaos run: rounds of index + questions on a whole local stack while a random worker is SIGKILLed.

Usage:
    PYTHONPATH=. nice -n 10 python bench/chaos.py --minutes 30

Starts its own Redis, every always-on worker and the gateway (as ``hindsight up`` does) on a scratch
folder. Each round rewrites a few notes and adds one, starts an index job and asks questions, and
SIGKILLs one random worker's whole process group at a random moment of the round, starting it again a
moment later (as a container restart policy would). Afterwards it counts:

- questions: answered, failed (with the reason the stream gave), or left waiting (no last event);
- documents, every file checked after every round: *exact* when, after the round's job, the
  manifest holds the file's current hash and exactly its chunks (ordinals 0..n-1); *repaired* when
  it became exact only after the next index job (a killed indexer's unfinished work); *lost* when
  even that left it missing or half-written;
- chunks no manifest row claims (orphans), which must stay 0.

Redelivery after a kill is shortened as in the fault tests (visibility timeouts of 20 s for question
stages and 120 s for index batches, with the time limits below them), so a round lasts minutes, not
the production hour. The reranker is the offline stand-in cross-encoder unless ``--reranker-dir``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import signal
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from cli.client import GatewayClient
from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, gateway_spec, process_alive, worker_specs
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from testing.processes import free_port, running_redis, wait_for

TOPICS = ("sourdough starter", "espresso ratio", "TCP retransmission", "Swiss rail pass", "tomato frost")
QUESTIONS = (
    "How does TCP retransmit a lost segment?",
    "How much coffee goes into an espresso?",
    "When do tomatoes go out?",
)
SERVED_QUEUES = ("index", "retrieve", "rerank", "map", "reduce")
KILLABLE = ("indexer", "retriever", "reranker", "mapper", "reducer")
ENV = {
    "HINDSIGHT_ONNX_THREADS": "1",
    "HINDSIGHT_RERANKER_PRECISION": "fp32",
    "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
    "HINDSIGHT_INDEX_BATCH_FILES": "4",
    "HINDSIGHT_QUESTION_VISIBILITY_TIMEOUT_S": "20",
    "HINDSIGHT_QUESTION_RESTORE_INTERVAL_S": "1",
    "HINDSIGHT_QUESTION_SOFT_TIME_LIMIT_S": "16",
    "HINDSIGHT_QUESTION_TIME_LIMIT_S": "18",
    "HINDSIGHT_QUESTION_STALL_S": "40",
    "HINDSIGHT_QUESTION_STALL_CHECK_S": "1",
    "HINDSIGHT_BROKER_VISIBILITY_TIMEOUT_S": "120",
    "HINDSIGHT_JOB_SOFT_TIME_LIMIT_S": "100",
    "HINDSIGHT_JOB_TIME_LIMIT_S": "110",
}
WAIT_S = 240  # a question or index job not ended by then is "left waiting"


def note(index: int, revision: int) -> str:
    topic = TOPICS[index % len(TOPICS)]
    sentences = " ".join(
        f"Note {index} revision {revision} on the {topic}: observation {n} adds a detail of its own."
        for n in range(6 + (index + revision) % 30)
    )
    return f"# {topic.title()} {index}\n\n{sentences}\n"


class Chaos:
    def __init__(self, scratch: Path, redis_url: str, reranker_dir: Path, seed: int) -> None:
        self.library = (scratch / "library").resolve()
        self.library.mkdir()
        port = free_port()
        self.settings = Settings(
            data_dir=scratch / "data",
            redis_url=f"{redis_url}/0",
            gateway_port=port,
            gateway_url=f"http://127.0.0.1:{port}",
        )
        ensure_local_key(self.settings)
        self.stack = LocalStack(self.settings)
        self.env = {
            **os.environ,
            **ENV,
            "HINDSIGHT_ROOTS": str(self.library),
            "HINDSIGHT_RERANKER_MODEL_DIR": str(reranker_dir),
            **self.stack.settings_env(),
        }
        self.specs = {s.name: s for s in [*worker_specs(), gateway_spec()] if s.name != "watcher"}
        self.client = GatewayClient(
            self.settings.gateway.gateway_url, client_key(self.settings), timeout_s=60
        )
        self.rng = random.Random(seed)
        self.revisions: dict[int, int] = {}
        self.tally: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()

    def start(self) -> None:
        for spec in self.specs.values():
            self.stack.start(spec, self.env)
        wait_for(self.served, 180, "every queue served", interval_s=1)

    def served(self) -> bool:
        try:
            queues = self.client.health()["queues"]
        except Exception:  # the gateway still starting
            return False
        return isinstance(queues, dict) and all(queues.get(q, 0) >= 1 for q in SERVED_QUEUES)

    def edit_library(self, changed: int) -> None:
        new = len(self.revisions)
        for index in [*self.rng.sample(sorted(self.revisions), min(changed, len(self.revisions))), new]:
            self.revisions[index] = self.revisions.get(index, -1) + 1
            (self.library / f"note-{index:04d}.md").write_text(note(index, self.revisions[index]))

    def kill_one(self, after_s: float) -> None:
        time.sleep(after_s)
        name = self.rng.choice(KILLABLE)
        pid = int(self.stack.pidfile(name).read_text())
        os.killpg(pid, signal.SIGKILL)
        wait_for(lambda: not process_alive(pid), 10, f"{name} to die")
        self.tally[f"killed {name}"] += 1
        time.sleep(self.rng.uniform(0.5, 3))
        self.stack.start(self.specs[name], self.env)

    def ask(self, question: str) -> None:
        outcome = "waiting"

        def follow() -> None:
            nonlocal outcome
            try:
                for event in self.client.question_events(self.client.ask(question)):
                    if event.stage == "answer":
                        outcome = "answered" if event.status == "done" else f"failed: {event.detail}"
            except Exception as exc:  # a refusal (503, 429) or a cut stream: a failure, with its reason
                outcome = f"failed: {type(exc).__name__}: {exc}"

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        reader.join(WAIT_S)
        kind = outcome.split(":")[0]
        self.tally[f"questions {kind}"] += 1
        if kind == "failed":
            self.reasons[outcome[:120]] += 1

    def index(self) -> bool:
        """Index the library and wait for the job's report; False when it never came."""
        job_id = self.client.index(str(self.library))
        try:
            wait_for(lambda: self.client.index_report(job_id), WAIT_S, "the index report", interval_s=1)
            return True
        except AssertionError:  # wait_for's timeout
            self.tally["index jobs left waiting"] += 1
            return False

    def not_exact(self) -> set[str]:
        """Files on disk whose manifest row is missing, of another version, or not backed by exactly
        its chunks; counts orphan chunks."""
        store = LanceDBStore(self.settings.store_dir, 384)
        manifest = store.manifest(str(self.library))
        wrong = set()
        for path in self.library.glob("*.md"):
            entry = manifest.get(str(path))
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if entry is None or entry.content_hash != digest:
                wrong.add(str(path))
                continue
            chunks = store.document_chunks(entry.document_id, list(range(entry.chunk_count + 1)))
            if [c.ordinal for c in chunks] != list(range(entry.chunk_count)):
                wrong.add(str(path))
        claimed = sum(e.chunk_count for e in store.manifest().values())
        self.tally["orphan chunks"] += max(0, store.count_chunks() - claimed)
        return wrong

    def round(self) -> None:
        self.edit_library(changed=4)
        killer = threading.Thread(target=self.kill_one, args=(self.rng.uniform(0, 6),))
        killer.start()
        askers = [threading.Thread(target=self.ask, args=(q,)) for q in self.rng.sample(QUESTIONS, 2)]
        for asker in askers:
            asker.start()
        self.index()
        for thread in (killer, *askers):
            thread.join()
        wrong = self.not_exact()
        self.tally["document checks: exact"] += len(self.revisions) - len(wrong)
        if wrong:
            wait_for(self.served, 180, "every queue served again", interval_s=1)
            self.index()
            still = self.not_exact() & wrong
            self.tally["document checks: repaired"] += len(wrong - still)
            self.tally["document checks: lost"] += len(still)
        self.tally["rounds"] += 1

    def print_table(self, elapsed_s: float) -> None:
        print(f"\nchaos: {self.tally['rounds']} rounds in {elapsed_s / 60:.1f} min")
        for key in sorted(self.tally):
            print(f"  {key:<30} {self.tally[key]}")
        for reason, count in self.reasons.most_common():
            print(f"  {count} x {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--reranker-dir", type=Path, help="a cross-encoder folder (default: the stand-in)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hindsight-chaos-") as folder:
        scratch = Path(folder)
        reranker = args.reranker_dir
        if reranker is None:
            from provisioning.standin import build_standin

            reranker = scratch / "standin"
            build_standin(reranker)
        (scratch / "redis").mkdir()
        with running_redis(scratch / "redis") as redis_url:
            chaos = Chaos(scratch, redis_url, reranker, args.seed)
            for _ in range(20):
                chaos.edit_library(changed=0)
            started = time.monotonic()
            try:
                chaos.start()
                chaos.index()
                while time.monotonic() - started < args.minutes * 60:
                    chaos.round()
                    chaos.print_table(time.monotonic() - started)
            finally:
                chaos.stack.down()
                chaos.print_table(time.monotonic() - started)


if __name__ == "__main__":
    main()
