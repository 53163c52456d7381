"""The scraper killed mid-export: the checkpoint and the export folder agree afterwards.

A process exporting threads through the scraper's writer is SIGKILLed at random moments, each run a
new revision of every thread (answers change, some titles too, so files move). "Agree" means: after
any kill the checkpoint parses, and every file it records that exists holds a whole Markdown file;
after the next uninterrupted run, the checkpoint's records and the Markdown files are one-to-one,
each file rendered from the thread's latest revision, with no stray file besides.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from services.scraper.checkpoint import CHECKPOINT_NAME, Checkpoint, content_hash
from services.scraper.markdown import render_thread
from tests.conftest import REPO
from tests.faults.export_writer import export, thread

pytestmark = pytest.mark.integration

THREADS = 400
KILLS = 8


def markdown_files(export_dir: Path) -> set[str]:
    return {str(path.relative_to(export_dir)) for path in export_dir.rglob("*.md")}


def kill_export_mid_run(export_dir: Path, revision: int, rng: random.Random) -> None:
    """SIGKILL the exporter once it has written a random number of threads, fewer than all."""
    exporter = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.export_writer", str(export_dir), str(revision), str(THREADS)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    target = rng.randint(1, THREADS - 1)
    try:
        assert exporter.stdout is not None
        for line in exporter.stdout:
            if int(line) >= target:
                break
    finally:
        os.killpg(exporter.pid, signal.SIGKILL)
        exporter.wait()


def test_an_export_killed_at_random_moments_leaves_checkpoint_and_files_that_agree_after_the_next_run(
    tmp_path: Path,
) -> None:
    export_dir = tmp_path / "export"
    rng = random.Random(23)
    killed_mid_run = 0
    for revision in range(1, KILLS + 1):
        kill_export_mid_run(export_dir, revision, rng)
        checkpoint = Checkpoint.model_validate_json((export_dir / CHECKPOINT_NAME).read_bytes())
        for record in checkpoint.threads.values():
            path = export_dir / record.path
            if path.exists():
                assert path.read_text().endswith(".\n"), f"{record.path} is torn"
        killed_mid_run += len(checkpoint.threads) < THREADS or any(
            record.listing != f"r{revision}" for record in checkpoint.threads.values()
        )

    export(export_dir, KILLS + 1, THREADS)

    checkpoint = Checkpoint.model_validate_json((export_dir / CHECKPOINT_NAME).read_bytes())
    latest = {t.uuid: t for t in (thread(number, KILLS + 1) for number in range(THREADS))}
    assert set(checkpoint.threads) == set(latest)
    assert {r.path for r in checkpoint.threads.values()} == markdown_files(export_dir), (
        "stray or missing files"
    )
    for uuid, record in checkpoint.threads.items():
        assert record.hash == content_hash(latest[uuid])
        assert (export_dir / record.path).read_text() == render_thread(latest[uuid])
    leftovers = sorted(str(p.relative_to(export_dir)) for p in export_dir.rglob(".*.tmp"))
    assert killed_mid_run > 0, "some kill landed mid-export"
    print(f"{KILLS} kills, {killed_mid_run} mid-export; temporary files left by the kills: {leftovers}")
