"""The watcher service: re-index each folder registered through the gateway whenever files under it
change, once the burst of changes settles (``shared.folder_watch``).

``python -m services.indexer.watcher`` watches the roots registered with ``POST /v1/watch`` and queues
an index scan for each root that changed; the scan is incremental (only changed files are embedded).
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

from shared.contracts import IndexRequest
from shared.folder_watch import RootWatcher
from shared.index_jobs import WatchRegistry, allowed_roots
from shared.settings import IndexingSettings, get_settings
from shared.tasking import enqueue_index

log = logging.getLogger(__name__)


def submit_scan(root: Path) -> str:
    """Queue an index scan of ``root``; returns the job id."""
    job_id = uuid.uuid4().hex
    enqueue_index(IndexRequest(job_id=job_id, root=str(root)))
    log.info("changes under %s: index job %s", root, job_id)
    return job_id


def watched_roots(registry: WatchRegistry, settings: IndexingSettings, roots_file: Path) -> list[Path]:
    """The watched roots still allowed: a registered root replaced since (by a link or another folder)
    is neither watched nor scanned (``shared.index_jobs``)."""
    allowed = allowed_roots(settings, roots_file)
    folders = [Path(w.root) for w in registry.list()]
    return [folder for folder in folders if any(folder.is_relative_to(root) for root in allowed)]


def main() -> None:
    """The watcher service: keep every root registered through the gateway in sync."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    registry = WatchRegistry()
    settings = get_settings()
    watcher = RootWatcher(
        roots=lambda: watched_roots(registry, settings.indexing, settings.roots_file),
        on_change=submit_scan,
        on_start=submit_scan,
        debounce_ms=settings.indexing.watch_debounce_ms,
        max_folders=settings.indexing.watch_max_folders,
    )
    try:
        watcher.run()
    except KeyboardInterrupt:
        watcher.stop_event.set()


if __name__ == "__main__":
    main()
