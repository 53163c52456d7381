"""The indexer SIGKILLed in the middle of a store write, then started again.

"Whole" means, after any kill: the store opens; no chunk lies outside the manifest; a manifest row
with a content hash holds exactly the chunks of that version (ordinals 0..n-1, every one written by
the write the hash names); a row left *pending* (hash emptied by an interrupted replace) still holds
the chunks of one write, never a mix; and the next scan indexes every pending or missing file again,
so the store ends holding exactly the files on disk.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.local_stack import celery_worker
from shared.stores.lancedb_store import LanceDBStore
from shared.topology import worker
from testing.processes import wait_for
from tests.conftest import REPO
from tests.faults.conftest import assert_manifest_agrees, progress_of
from tests.faults.files import write_notes
from tests.faults.stack import FaultStack, assert_store_holds_exactly, index_report
from tests.faults.store_writer import DIMENSION, DOCUMENTS, MAX_CHUNKS, document_uri

pytestmark = pytest.mark.integration

KILLS = 12
COMPACT_EVERY = 4  # writes between compactions in the writer: kills land in compaction and cleanup too


def versions(store_dir: Path) -> int:
    """Commits of the chunks table so far (LanceDB writes one manifest file per version)."""
    return len(list((store_dir / "chunks.lance" / "_versions").glob("*.manifest")))


def kill_writer_mid_write(store_dir: Path, seed: int, rng: random.Random) -> None:
    """Start a store writer, let it commit a few versions, then SIGKILL it at a random moment."""
    before = versions(store_dir) if store_dir.exists() else 0
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.store_writer", str(store_dir), str(COMPACT_EVERY), str(seed)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,
    )
    try:
        wait_for(lambda: versions(store_dir) >= before + 3, 60, "the writer's first commits", interval_s=0.05)
        time.sleep(rng.uniform(0.05, 1.5))
        assert writer.poll() is None, "the writer died on its own"
    finally:
        os.killpg(writer.pid, signal.SIGKILL)
        writer.wait()


def assert_no_half_written_document(store: LanceDBStore) -> int:
    """Beyond :func:`assert_manifest_agrees`: every row's chunks come from one write, the row's own
    unless it is pending; returns how many rows are pending."""
    manifest = store.manifest()
    held = assert_manifest_agrees(store, MAX_CHUNKS)
    for uri, chunks in held.items():
        writes = {chunk.text for chunk in chunks}
        assert len(writes) <= 1, f"{uri}: chunks of several writes {writes}"
        assert not manifest[uri].content_hash or writes == {manifest[uri].content_hash}, uri
    assert set(manifest) <= {document_uri(n) for n in range(DOCUMENTS)}
    return sum(not entry.content_hash for entry in manifest.values())


def test_a_store_writer_killed_at_random_moments_never_leaves_a_half_written_document(tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    rng = random.Random(23)
    pending, repaired = 0, 0
    for kill in range(KILLS):
        kill_writer_mid_write(store_dir, kill, rng)
        store = LanceDBStore(store_dir, DIMENSION)
        repaired += bool(store.repaired)
        pending += assert_no_half_written_document(store)
        assert LanceDBStore(store_dir, DIMENSION).repaired.model_dump() == {
            "orphan_documents": [],
            "pending_documents": [],
        }, "one repair leaves nothing to repair"
    print(f"{KILLS} kills, {versions(store_dir)} versions: {pending} rows left pending, {repaired} repairs")


@pytest.fixture
def stack(redis_url: str, tmp_path: Path) -> Iterator[FaultStack]:
    library = (tmp_path / "library").resolve()
    library.mkdir()
    env = {
        "HINDSIGHT_ROOTS": str(library),
        "HINDSIGHT_ONNX_THREADS": "1",
        "HINDSIGHT_INDEX_BATCH_FILES": "4",
        "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "100000",
        "HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE": "100000",
    }
    stack = FaultStack(redis_url, tmp_path / "data", env)
    try:
        stack.start(celery_worker(worker("indexer"), name="indexer"))
        stack.start_gateway()
        stack.wait_until_served({"index": 1})
        yield stack
    finally:
        stack.down()


def test_the_indexer_killed_mid_job_and_restarted_ends_with_every_file_whole_after_the_next_scan(
    stack: FaultStack,
) -> None:
    root = Path(stack.env["HINDSIGHT_ROOTS"]) / "notes"
    good = write_notes(root, 120, subfolders=3)

    job_id = stack.client.index(str(root))
    at_kill = wait_for(
        lambda: (p := progress_of(stack, job_id)) and p.done >= p.total // 4 and p,
        180,
        "a quarter of the files",
    )
    stack.kill("indexer")
    assert_manifest_agrees(stack.store(), max_chunks=1)
    stack.restart("indexer")
    stack.wait_until_served({"index": 1})
    report = index_report(stack, stack.client.index(str(root)), timeout_s=240)

    assert at_kill.done < at_kill.total, "the indexer was killed while the job was still running"
    assert report.failed == 0 and report.new + report.changed + report.unchanged == len(good)
    assert_store_holds_exactly(stack, root, good)
    print(f"killed at {at_kill.done}/{at_kill.total} files; the next scan: {report.new} new, "
          f"{report.changed} changed, {report.unchanged} unchanged")  # fmt: skip
