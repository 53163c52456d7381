"""Watch mode on the real filesystem: a burst of edits triggers one debounced, incremental re-sync."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from services.indexer.manifest_diff import document_id_for
from services.indexer.pipeline import sync_root
from shared.contracts import IndexRequest, ScanReport
from shared.embedding import OnnxEmbedder
from shared.folder_watch import RootWatcher, roots_touched
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from testing.processes import wait_for


def test_roots_touched_picks_the_most_specific_watched_root(tmp_path: Path) -> None:
    outer, inner = tmp_path, tmp_path / "inner"
    changes = {(1, str(inner / "a.md")), (2, str(outer / "b.md")), (1, "/elsewhere/c.md")}
    assert sorted(roots_touched(changes, [outer, inner])) == sorted([inner, outer])  # type: ignore[arg-type]
    assert roots_touched({(1, str(inner / "a.md"))}, [outer, inner]) == [inner]  # type: ignore[arg-type]


def test_edits_are_debounced_into_one_resync_that_updates_and_deletes(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    note = docs / "note.md"
    note.write_text("# Note\n\nThe first version mentions barley.\n")
    reports: list[ScanReport] = []

    def resync(root: Path) -> None:
        reports.append(
            sync_root(
                IndexRequest(job_id="watch", root=str(root)),
                store,
                embedder,
                settings.indexing,
                settings.data_dir,
            )
        )

    watcher = RootWatcher(lambda: [docs], resync, debounce_ms=400, refresh_ms=200, on_start=resync)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(reports) == 1, 20, "the initial sync")
        assert reports[0].new == 1
        time.sleep(0.3)
        for i in range(5):
            note.write_text(f"# Note\n\nVersion {i} mentions spelt.\n")
            time.sleep(0.02)
        wait_for(lambda: len(reports) >= 2, 20, "a re-sync after the edits")
        time.sleep(0.8)
        assert len(reports) == 2, "a burst of saves must trigger exactly one re-sync"
        assert reports[1].changed == 1 and reports[1].unchanged == 0
        chunks = store.document_chunks(document_id_for(str(note)), [0])
        assert "Version 4 mentions spelt." in chunks[0].text

        note.unlink()
        wait_for(lambda: len(reports) >= 3, 20, "a re-sync after the delete")
        assert reports[2].deleted == 1
        assert store.count_chunks() == 0
    finally:
        watcher.stop_event.set()
        thread.join(10)
    assert not thread.is_alive()
