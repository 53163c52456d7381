"""The disk fills up during an index write: a real tmpfs of a few MiB, mounted by the test (root only).

"Whole" means: the write that meets ENOSPC fails with the error (the indexer's retry and park path
takes it from there); the store still opens on the full disk and reads every document's previous
version whole, its manifest agreeing with its chunks; once space is freed, writing the same batch
again succeeds and the store holds exactly the new version.
"""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from shared.stores.lancedb_store import LanceDBStore, chunk_row
from tests.faults.store_writer import DIMENSION, MAX_CHUNKS, written_document
from tests.faults.test_store_crash import assert_manifest_agrees

pytestmark = pytest.mark.integration

DOCUMENTS = 10
VOLUME = "8m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={VOLUME}", "tmpfs", str(mountpoint)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=True)


def write_version(store: LanceDBStore, write: str, chunks_each: int, text_bytes: int) -> None:
    documents, chunks = [], []
    for number in range(DOCUMENTS):
        document, document_chunks = written_document(number, write, chunks_each)
        text = (write + " ") * (text_bytes // (len(write) + 1))
        documents.append(document)
        chunks += [c.model_copy(update={"text": text, "char_end": len(text)}) for c in document_chunks]
    store.replace_documents(documents, chunks, np.ones((len(chunks), DIMENSION), dtype=np.float32))


def fill(disk: Path, leave_bytes: int) -> Path:
    """A file taking all the free space but ``leave_bytes``."""
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    filler.write_bytes(b"\0" * max(0, filler.stat().st_size - leave_bytes))
    return filler


def test_a_write_that_fills_the_disk_fails_and_leaves_the_previous_version_readable(small_disk: Path) -> None:
    store_dir = small_disk / "store"
    write_version(LanceDBStore(store_dir, DIMENSION), "first", chunks_each=2, text_bytes=200)
    filler = fill(small_disk, leave_bytes=64 * 1024)

    with pytest.raises(Exception) as failure:  # LanceDB wraps the OSError in its own error types
        write_version(LanceDBStore(store_dir, DIMENSION), "second", chunks_each=4, text_bytes=40_000)
    full = LanceDBStore(store_dir, DIMENSION)
    held = assert_manifest_agrees(full, MAX_CHUNKS)
    previous = {chunk.text.split()[0] for chunks in held.values() for chunk in chunks}
    pending = sum(not e.content_hash for e in full.manifest().values())

    filler.unlink()
    write_version(LanceDBStore(store_dir, DIMENSION), "second", chunks_each=4, text_bytes=40_000)
    after = LanceDBStore(store_dir, DIMENSION)
    assert_manifest_agrees(after, MAX_CHUNKS)
    counts = {e.document_id: e.chunk_count for e in after.manifest().values()}

    assert "No space left" in str(failure.value) or "ENOSPC" in str(failure.value), failure.value
    assert len(full.manifest()) == DOCUMENTS and previous == {"first"}, (
        "every document still reads its first version"
    )
    assert counts == {f"doc-{n}": 4 for n in range(DOCUMENTS)}
    print(f"ENOSPC: {str(failure.value)[:160]}; {pending} rows pending until the next scan")


def test_a_store_that_needs_a_repair_still_opens_and_reads_on_a_full_disk(small_disk: Path) -> None:
    store_dir = small_disk / "store"
    store = LanceDBStore(store_dir, DIMENSION)
    write_version(store, "first", chunks_each=2, text_bytes=200)
    orphan, orphan_chunks = written_document(DOCUMENTS, "orphan", 3)
    # Chunks no manifest row claims, as a writer killed between its two commits leaves them.
    store._chunks.add([chunk_row(chunk, np.ones(DIMENSION, dtype=np.float32)) for chunk in orphan_chunks])
    fill(small_disk, leave_bytes=0)

    full = LanceDBStore(store_dir, DIMENSION)
    readable = {
        e.document_id: len(full.document_chunks(e.document_id, [0, 1, 2])) for e in full.manifest().values()
    }
    (small_disk / "filler").unlink()
    repaired = LanceDBStore(store_dir, DIMENSION)

    assert readable == {f"doc-{n}": 2 for n in range(DOCUMENTS)}
    assert repaired.repaired.orphan_documents == [orphan.id]
    assert_manifest_agrees(repaired, MAX_CHUNKS)
