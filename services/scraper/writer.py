"""Write a thread's Markdown only when its content hash differs from the checkpoint's.

A thread both scraped and imported is one file. Copies are the same thread only when their uuid is
the same or, for imports (which carry none), their first question, the opening of their first
answer and, where both are known, their start date agree (see
:func:`~services.scraper.checkpoint.thread_identity`): a prompt asked again a year later is another
thread and gets its own file. An import of a thread already there (scraped or imported) is left
alone, since a scraped copy carries the real uuid, URL and sources; a scrape of a thread first
imported takes over the imported file's record and replaces the file.
"""

from __future__ import annotations

from collections import defaultdict
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pydantic import BaseModel

from services.scraper.checkpoint import (
    CheckpointStore,
    ThreadRecord,
    content_hash,
    thread_identity,
    write_atomic,
)
from services.scraper.filenames import thread_relpath
from services.scraper.markdown import MARKDOWN_FORMAT, render_thread
from services.scraper.models import Thread
from shared.contracts import ExportReport

SAVE_EVERY = 25


SCRAPED, IMPORTED = "scraped", "imported"


class SiteCount(BaseModel):
    """What the site said of a scraped thread: its listing's ``query_count`` and whether its last
    page said ``has_next_page: false``."""

    turns: int | None = None
    complete: bool | None = None


class WriteOutcome(StrEnum):
    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    #: An import of a thread already there under another uuid (scraped, or imported before).
    SAME_THREAD = "same thread"


class ThreadWriter:
    """Renders changed threads into the export folder and keeps the checkpoint in step.

    The checkpoint is saved after every file written, so a killed run leaves no file without its
    record: the next run neither fetches it again nor reports it as new. (Record-only changes, such
    as a thread found gone, are saved every ``SAVE_EVERY`` and on :meth:`close`.) A file written
    under a name the thread has since lost (its title changed between the killed run and the next)
    is a stray no record claims: writing the thread again removes it.
    """

    def __init__(self, export_dir: Path) -> None:
        self.export_dir = export_dir
        self.checkpoint = CheckpointStore(export_dir)
        self._unsaved = 0
        self._files_by_tail = files_by_tail(export_dir)

    def _relpath(self, thread: Thread) -> str:
        relpath = str(thread_relpath(thread))
        owner = self.checkpoint.owner_of(relpath)
        if owner not in (None, thread.uuid):
            relpath = str(thread_relpath(thread, unique_id=True))
        return relpath

    def is_current(self, uuid: str, listing: str) -> bool:
        """The listing shows no change since the last write, whose file is still there in the current
        format."""
        record = self.checkpoint.get(uuid)
        return bool(
            record
            and listing
            and record.listing == listing
            and record.format == MARKDOWN_FORMAT
            and (self.export_dir / record.path).exists()
        )

    def known_gone(self, uuid: str, listing: str) -> bool:
        """Perplexity said this thread was deleted or purged, and its listing has not moved since."""
        return bool(listing) and self.checkpoint.data.gone.get(uuid) == listing

    def mark_gone(self, uuid: str, listing: str) -> None:
        self.checkpoint.data.gone[uuid] = listing
        self._note_change()

    def _other_copy(self, thread: Thread, identity: str) -> tuple[str, ThreadRecord] | None:
        """The uuid and record of the one other copy of this thread, if any."""
        other = self.checkpoint.same_thread(identity, thread.uuid, thread.created)
        return (other, self.checkpoint.data.threads[other]) if other else None

    def _with_space_title(self, thread: Thread) -> Thread:
        """Remember the titles of spaces; give a thread that knows only its space's uuid the title
        a scrape saw for it, else ``Space <uuid prefix>``."""
        spaces = self.checkpoint.data.spaces
        if thread.space_uuid and thread.space:
            spaces[thread.space_uuid] = thread.space
        if thread.space:
            return thread
        known = spaces.get(thread.space_uuid or "")
        return thread.model_copy(update={"space": known or f"Space {(thread.space_uuid or '')[:8]}".strip()})

    def _also_imported(self, uuid: str, record: ThreadRecord) -> str:
        """An import of a thread already there: the first copy stays, and now counts both ways."""
        if IMPORTED not in record.origins:
            self.checkpoint.put(uuid, record.model_copy(update={"origins": [*record.origins, IMPORTED]}))
            self._note_change()
        return record.path

    def write(
        self, thread: Thread, listing: str = "", *, imported: bool = False, site: SiteCount | None = None
    ) -> tuple[WriteOutcome, str]:
        """Write the thread if it changed; returns the outcome and the file's relative path."""
        thread = self._with_space_title(thread)
        digest = content_hash(thread)
        identity = thread_identity(thread)
        record = self.checkpoint.get(thread.uuid)
        other = None if record else self._other_copy(thread, identity)
        if other and imported:
            return WriteOutcome.SAME_THREAD, self._also_imported(*other)
        if other and not imported and other[1].imported:
            record = self.checkpoint.data.threads.pop(other[0])  # scraped now: it replaces the import
            self._note_change()
        origin = IMPORTED if imported else SCRAPED
        origins = sorted({*(record.origins if record else []), origin})
        site = site or SiteCount()
        relpath = self._relpath(thread)
        fresh = ThreadRecord(
            hash=digest,
            path=relpath,
            listing=listing,
            identity=identity,
            imported=imported,
            created=thread.created,
            origins=origins,
            site_turns=site.turns if site.turns is not None else (record.site_turns if record else None),
            site_complete=site.complete
            if site.complete is not None
            else (record.site_complete if record else None),
            format=MARKDOWN_FORMAT,
        )
        current = record and record.hash == digest and record.format == MARKDOWN_FORMAT
        if record and current and (self.export_dir / record.path).exists():
            kept = fresh.model_copy(update={"path": record.path})
            if kept != record or self.checkpoint.get(thread.uuid) is None:
                self.checkpoint.put(thread.uuid, kept)
                self._note_change()
            self._drop_strays(thread, record.path)
            return WriteOutcome.UNCHANGED, record.path
        rendered = render_thread(thread).encode("utf-8")
        target = self.export_dir / relpath
        written_before = record is None and target.is_file() and target.read_bytes() == rendered
        if not written_before:
            write_atomic(target, rendered)
        if record and record.path != relpath:
            (self.export_dir / record.path).unlink(missing_ok=True)
        self.checkpoint.put(thread.uuid, fresh)
        self.checkpoint.data.gone.pop(thread.uuid, None)
        self._unsaved = 0
        self.checkpoint.save()
        self._drop_strays(thread, relpath)
        if written_before:  # by a run killed before it saved this record
            return WriteOutcome.UNCHANGED, relpath
        return (WriteOutcome.CHANGED if record else WriteOutcome.NEW), relpath

    def _drop_strays(self, thread: Thread, kept: str) -> None:
        """Delete the files named for this thread's id that no record claims, but ``kept``."""
        for tail in {name_tail(thread_relpath(thread)), name_tail(thread_relpath(thread, unique_id=True))}:
            for stray in self._files_by_tail.pop(tail, set()) - {kept}:
                if self.checkpoint.owner_of(stray) is None:
                    (self.export_dir / stray).unlink(missing_ok=True)

    def _note_change(self) -> None:
        self._unsaved += 1
        if self._unsaved >= SAVE_EVERY:
            self.close()

    def close(self) -> None:
        if self._unsaved:
            self.checkpoint.save()
            self._unsaved = 0


def name_tail(path: PurePosixPath | Path) -> str:
    """The ``(id).md`` that ends an exported thread's file name."""
    return path.name.rpartition(" (")[2]


def files_by_tail(export_dir: Path) -> dict[str, set[str]]:
    """The export folder's Markdown files (relative paths) by the ``(id).md`` ending their names."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in export_dir.rglob("*.md") if export_dir.is_dir() else []:
        found[name_tail(path)].add(str(path.relative_to(export_dir)))
    return found


def tally(report: ExportReport, outcome: WriteOutcome, relpath: str, title: str = "") -> None:
    """Count one write in the report; written files are listed for the indexer and the user, and an
    import kept once as a thread already there is named."""
    if outcome is WriteOutcome.NEW:
        report.new += 1
    elif outcome is WriteOutcome.CHANGED:
        report.changed += 1
    else:
        report.unchanged += 1
        if outcome is WriteOutcome.SAME_THREAD:
            report.kept_once.append(f"{title!r} is already there as {relpath}")
        return
    report.written.append(relpath)
