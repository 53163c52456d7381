"""``hindsight index`` as a script sees it: with its output piped (not a terminal) each file's
progress is a plain line as it happens, the exit status says whether anything was indexed, and
Ctrl-C cancels the job on the gateway.

The stack is the real local one (Redis, Celery workers, gateway as processes) on its own ports.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli.actions.index import BarUpdate, plain_line
from cli.local_key import stored_local_key
from shared.contracts import ScanReport
from shared.settings import Settings
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
    shape = r"^\d+/3 files · [\d.]+ [kM]?B/s · [\d.]+ files/s · ETA \S+ · \S"
    progress = [line for line in lines if re.match(shape, line)]
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


def gateway(env: dict[str, str]) -> httpx.Client:
    """The stack's gateway with the key ``hindsight up`` made for the CLI."""
    key = stored_local_key(Settings(data_dir=Path(env["HINDSIGHT_DATA_DIR"])))
    return httpx.Client(base_url=env["HINDSIGHT_GATEWAY_URL"], headers={"X-API-Key": key or ""})


def finished_job(client: httpx.Client, folder: Path) -> dict[str, Any]:
    """The status of the folder's latest index job once it has its report (waits for the batch
    being indexed when it was cancelled to finish)."""
    for _ in range(600):
        (entry,) = [e for e in client.get("/v1/library").json() if e["root"] == str(folder.resolve())]
        report = entry.get("last_report")
        if report is not None and not entry["running"]:
            return dict(client.get(f"/v1/index/{report['job_id']}").json())
        time.sleep(0.2)
    raise AssertionError(f"the job of {folder} never ended")


def test_ctrl_c_cancels_the_job_keeps_what_was_indexed_exits_130_and_the_next_run_finishes(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    text = (REPO / "samples" / "notes").glob("*.md")
    body = "\n\n".join(path.read_text() for path in text)
    total = 12 * 32  # twelve batches: Ctrl-C after the first leaves most not begun
    for number in range(total):
        (folder / f"note-{number:03d}.md").write_text(f"# Note {number}\n\n{body}")
    running = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "index", str(folder)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert running.stdout is not None
    seen = []
    for line in running.stdout:  # piped: one plain line per file done
        seen.append(line)
        if re.match(rf"^\d+/{total} files", line):
            break
    running.send_signal(signal.SIGINT)
    rest, _ = running.communicate(timeout=60)
    output = "".join(seen) + rest
    assert running.returncode == 130, output
    cancelled = (
        rf"^cancelled: (\d+) of {total} files indexed, and the files being embedded now finish; "
        "run the same command to finish the rest$"
    )
    said = re.search(cancelled, rest, re.M)
    assert said is not None and int(said.group(1)) < total, output

    with gateway(env) as client:
        status = finished_job(client, folder)
    assert status["status"] == "cancelled" and status["report"]["cancelled"], status

    again = index(env, folder)  # the files the cancelled job indexed stay indexed; the rest now are
    assert again.returncode == 0, again.stdout + again.stderr
    counts = re.search(rf"^scanned {total}: (\d+) new, 0 changed, (\d+) unchanged", again.stdout, re.M)
    assert counts is not None, again.stdout
    new, unchanged = int(counts.group(1)), int(counts.group(2))
    assert new + unchanged == total and 0 < unchanged < total and new > 0, again.stdout
