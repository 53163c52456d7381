"""``hindsight index`` as a script sees it: with its output piped (not a terminal) each file's
progress is a plain line as it happens, and the exit status says whether anything was indexed.

The stack is the real local one (Redis, Celery workers, gateway as processes) on its own ports.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.actions.index import BarUpdate, plain_line
from shared.contracts import ScanReport
from testing.processes import free_port
from tests.conftest import REPO, models_dir, run_hindsight

pytestmark = pytest.mark.integration
BROKEN_PDF = b"%PDF-1.4 this is not a PDF body"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    data_dir = tmp_path_factory.mktemp("index-output")
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    environment.update(
        PYTHONPATH=str(REPO), COLUMNS="200", HINDSIGHT_DATA_DIR=str(data_dir),
        HINDSIGHT_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", HINDSIGHT_GATEWAY_PORT=str(port),
        HINDSIGHT_GATEWAY_URL=f"http://127.0.0.1:{port}", HINDSIGHT_MODELS_DIR=str(models_dir()),
    )  # fmt: skip
    run_hindsight(environment, "up")
    try:
        yield environment
    finally:
        subprocess.run([sys.executable, "-m", "cli.main", "down"], cwd=REPO, env=environment, timeout=60)


def index(env: dict[str, str], folder: Path) -> subprocess.CompletedProcess[str]:
    """``hindsight index FOLDER`` with stdout a pipe, as under ``| tee``."""
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "index", str(folder)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def test_piped_progress_is_a_plain_line_per_file_and_a_partly_failed_scan_exits_0(
    env: dict[str, str], tmp_path: Path
) -> None:
    shutil.copytree(REPO / "samples" / "notes", tmp_path / "notes")
    (tmp_path / "notes" / "scan.pdf").write_bytes(BROKEN_PDF)
    done = index(env, tmp_path / "notes")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    progress = [line for line in lines if re.match(r"^\d+/3 files · [\d.]+ files/s · ETA \S+ · \S", line)]
    assert [line.split(" ", 1)[0] for line in progress] == ["1/3", "2/3", "3/3"], done.stdout
    assert any(line.startswith("failed ") and "scan.pdf: corrupt PDF" in line for line in lines)
    assert "\x1b[" not in done.stdout  # no terminal control codes in a pipe
    assert lines[-1].startswith("failed ") and any(line.startswith("scanned 3: 3 new") for line in lines)


def test_a_scan_where_every_file_failed_exits_1(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "scan.pdf").write_bytes(BROKEN_PDF)
    done = index(env, tmp_path / "broken")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout and "scan.pdf: corrupt PDF" in done.stdout


def test_what_counts_as_nothing_indexed() -> None:
    assert ScanReport(job_id="j", root="/r", failed=1).nothing_indexed  # the scan itself failed
    assert ScanReport(job_id="j", root="/r", scanned=2, new=2, failed=2).nothing_indexed
    assert not ScanReport(job_id="j", root="/r", scanned=3, new=3, failed=1).nothing_indexed
    assert not ScanReport(job_id="j", root="/r", scanned=3, unchanged=3).nothing_indexed
    assert plain_line(BarUpdate(description="scanned 3: 3 new")) == "scanned 3: 3 new"
    assert plain_line(BarUpdate(description="indexing", total=3)) == "3 files to index"
