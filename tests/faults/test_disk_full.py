"""The disk fills up during an index write: a real tmpfs of a few MiB, mounted by the test (root only).

Through the indexer too: a scan of changed files on a full disk reports each of them failed with
the disk's error, the previous versions stay readable, and the scan after space is freed indexes
them (their rows were left pending).

"Whole" means: the write that meets ENOSPC fails with the error (the indexer's retry and park path
takes it from there); the store still opens on the full disk and reads every document's previous
version whole, its manifest agreeing with its chunks; once space is freed, writing the same batch
again succeeds and the store holds exactly the new version.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from services.indexer.pipeline import sync_root
from shared.contracts import IndexRequest
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore, chunk_row
from tests.conftest import require_embedder
from tests.faults.conftest import assert_manifest_agrees, fill, mounted_tmpfs
from tests.faults.files import write_notes
from tests.faults.store_writer import DIMENSION, MAX_CHUNKS, written_document

pytestmark = pytest.mark.integration

DOCUMENTS = 10
VOLUME = "8m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "disk", VOLUME) as disk:
        yield disk


def write_version(store: LanceDBStore, write: str, chunks_each: int, text_bytes: int) -> None:
    documents, chunks = [], []
    for number in range(DOCUMENTS):
        document, document_chunks = written_document(number, write, chunks_each)
        text = (write + " ") * (text_bytes // (len(write) + 1))
        documents.append(document)
        chunks += [c.model_copy(update={"text": text, "char_end": len(text)}) for c in document_chunks]
    store.replace_documents(documents, chunks, np.ones((len(chunks), DIMENSION), dtype=np.float32))


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


def test_an_index_scan_on_a_full_disk_fails_each_changed_file_with_the_reason_and_the_next_scan_indexes_them(
    small_disk: Path, tmp_path: Path
) -> None:
    library = (tmp_path / "library").resolve()
    notes = write_notes(library, 12)
    settings = Settings(data_dir=small_disk / "data", models_dir=require_embedder(), roots=str(library))
    embedder = OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2", threads=1)
    store = LanceDBStore(settings.store_dir, embedder.dimension)
    request = IndexRequest(job_id="disk-full", root=str(library))
    assert sync_root(request, store, embedder, settings.indexing, settings.data_dir).failed == 0
    changed = sorted(notes)[:5]
    for path in changed:
        Path(path).write_text(Path(path).read_text() + "\n" + "A later paragraph added to the note. " * 400)
    filler = fill(small_disk, leave_bytes=16 * 1024)

    on_full_disk = sync_root(request, store, embedder, settings.indexing, settings.data_dir)
    readable = {
        uri: [c.text for c in store.document_chunks(e.document_id, [0, 1])]
        for uri, e in store.manifest().items()
    }
    filler.unlink()
    after = sync_root(
        request,
        LanceDBStore(settings.store_dir, embedder.dimension),
        embedder,
        settings.indexing,
        settings.data_dir,
    )

    reasons = {result.path: result.reason or "" for result in on_full_disk.failures}
    assert sorted(reasons) == changed
    assert all("No space left on device" in reason for reason in reasons.values()), reasons
    assert all(len(chunks) == 1 and "later paragraph" not in chunks[0] for chunks in readable.values())
    assert (after.changed, after.failed) == (len(changed), 0)
    held = assert_manifest_agrees(LanceDBStore(settings.store_dir, embedder.dimension), 64)
    assert all(len(held[path]) > 1 for path in changed), "the longer notes are indexed in full"
    print(f"on the full disk: {next(iter(reasons.values()))[:140]}")
