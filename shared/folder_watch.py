"""Watch folders and call back once a burst of changes under one has settled.

Editors save in bursts (temp file, rename, metadata); a root is reported only once no change has
arrived under it for ``debounce_ms``, so one save triggers one re-sync. The indexer's watcher service
(``services.indexer.watcher``) and ``hindsight index --watch`` both use :class:`RootWatcher`.

Each folder is watched on its own (one inotify watch, not recursive): the folders are listed with
folder descriptors (``os.fwalk``), never through a link, hidden ones passed over, and at most
``max_folders`` of them. A recursive watch would follow a symlinked folder dropped into a root (a link
to ``/`` takes every inotify watch the machine's user may have); a root that is itself a link is not
watched at all. The folder list is taken again after each settled burst, so new folders are watched.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles

log = logging.getLogger(__name__)

STEP_MS = 50


def roots_touched(changes: set[tuple[watchfiles.Change, str]], roots: list[Path]) -> list[Path]:
    """The watched roots that contain at least one changed path (most specific root first)."""
    touched: list[Path] = []
    for _, changed in changes:
        path = Path(changed)
        owner = max((r for r in roots if path.is_relative_to(r)), key=lambda r: len(r.parts), default=None)
        if owner is not None and owner not in touched:
            touched.append(owner)
    return touched


def watchable_folders(roots: list[Path], max_folders: int) -> list[Path]:
    """The real (not linked, not hidden) folders under ``roots``, roots first, at most ``max_folders``."""
    folders: list[Path] = []
    for root in roots:
        for top, subfolders, _, dir_fd in os.fwalk(root, follow_symlinks=False):
            folders.append(Path(top))
            subfolders[:] = [name for name in sorted(subfolders) if real_folder(name, dir_fd)]
            if len(folders) >= max_folders:
                log.warning(
                    "watching only the first %d folders; set HINDSIGHT_WATCH_MAX_FOLDERS", max_folders
                )
                return folders
    return folders


def real_folder(name: str, dir_fd: int) -> bool:
    """A folder entry that is no link and not hidden."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and not name.startswith(".")


def guarded(action: Callable[[Path], object], root: Path) -> None:
    """Run one re-sync; its failure is logged and must not end watch mode."""
    try:
        action(root)
    except Exception:
        log.exception("re-indexing %s failed", root)


class RootWatcher:
    """Calls ``on_change(root)`` after each settled burst of changes under a watched root.

    ``roots`` is asked again every ``refresh_ms`` so roots can be added or removed while running;
    ``on_start(root)`` runs once for each root as it starts being watched (an initial sync).
    """

    def __init__(
        self,
        roots: Callable[[], list[Path]],
        on_change: Callable[[Path], object],
        debounce_ms: int,
        refresh_ms: int = 2_000,
        on_start: Callable[[Path], object] | None = None,
        stop_event: threading.Event | None = None,
        max_folders: int = 10_000,
    ) -> None:
        self._roots = roots
        self._on_change = on_change
        self._on_start = on_start
        self._debounce_ms = debounce_ms
        self._refresh_ms = refresh_ms
        self.stop_event = stop_event or threading.Event()
        self._max_folders = max_folders
        self._started: set[Path] = set()

    def current_roots(self) -> list[Path]:
        """The roots to watch: folders, not links (a root replaced by a link is not followed)."""
        return sorted({root for root in self._roots() if root.is_dir() and not root.is_symlink()})

    def run(self) -> None:
        while not self.stop_event.is_set():
            roots = self.current_roots()
            for root in roots:
                if root not in self._started and self._on_start is not None:
                    guarded(self._on_start, root)
                self._started.add(root)
            if not roots:
                self.stop_event.wait(self._refresh_ms / 1000)
                continue
            self._watch(roots)

    def _watch(self, roots: list[Path]) -> None:
        """Watch ``roots`` until the set of roots changes or the watcher stops.

        Debounce on the trailing edge: a root is re-synced once ``debounce_ms`` have passed without
        a change under it, however long the burst of changes before that lasted.
        """
        pending: set[Path] = set()
        last_change = 0.0
        tick_ms = max(STEP_MS, min(self._debounce_ms // 4, self._refresh_ms))
        folders = watchable_folders(roots, self._max_folders)
        for changes in watchfiles.watch(
            *folders,
            recursive=False,
            debounce=self._debounce_ms,
            step=STEP_MS,
            stop_event=self.stop_event,
            rust_timeout=tick_ms,
            yield_on_timeout=True,
        ):
            now = time.monotonic()
            if changes:
                pending.update(roots_touched(changes, roots))
                last_change = now
            if pending and now - last_change >= self._debounce_ms / 1000:
                for root in sorted(pending):
                    guarded(self._on_change, root)
                pending.clear()
                if watchable_folders(roots, self._max_folders) != folders:
                    return
            if not pending and self.current_roots() != roots:
                return
