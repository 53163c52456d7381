"""Plan a scan of a folder and index batches of files: the logic behind the scan and batch tasks.

A scan diffs the files on disk against the store's manifest (SHA-256 of the bytes), deletes what
disappeared, and returns the new or changed files in batches (``index_batch_files`` files, at most
``index_batch_bytes`` of them on disk). A batch loads and chunks each file (a thread ahead of the
embedder), embeds the chunks in calls of about ``index_embed_tokens`` tokens filled across files (and,
in a whole scan, across batches), and writes all its documents in one store write while the embedder
goes on (``services.indexer.stream``): per-file calls were a few chunks each and left the embedder
mostly idle. Indexing a file replaces exactly that document's chunks. A
file that cannot be read is reported for itself alone and loses its old chunks too, so the store
never keeps text the file no longer has; the file is tried again on the next scan and reported again
until it is fixed. Errors of the backends (store, embedder) are *not* caught by
:func:`index_batch`: they are transient, and the Celery edge retries the batch with backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from services.indexer.chunking import chunk_text
from services.indexer.discovery import discover
from services.indexer.loaders import LoadedDocument, LoadError, SkippedFileError, load_document, refused
from services.indexer.manifest_diff import diff_against_manifest, document_id_for, file_digest
from services.indexer.refusals import Refusals
from services.indexer.stream import BatchOutcome, ChunkProgress, PreparedFile, index_batches
from shared.contracts import (
    MARKUP_KINDS,
    Chunk,
    Document,
    IndexBatch,
    IndexFileResult,
    IndexFileTask,
    IndexRequest,
    ScanReport,
)
from shared.index_jobs import PathOutsideRootsError, allowed_roots, confine_to_roots, refused_roots
from shared.interfaces import Embedder, TokenSpans, VectorStore
from shared.safe_files import RefusedFileError
from shared.settings import IndexingSettings, roots_file_in
from shared.thread_address import EXPORTED_THREAD_SOURCE, perplexity_address

log = logging.getLogger(__name__)


# A scan may delete one vanished document unasked; from this many on, not more than half the root's.
MIN_GUARDED_DELETIONS = 2


def begin_scan(
    request: IndexRequest, store: VectorStore, settings: IndexingSettings, data_dir: Path
) -> tuple[ScanReport, list[IndexFileTask]]:
    """Diff the root against the manifest, delete what is gone, and list the files to (re)index.

    Only documents the walk could have seen are deleted: not those under hidden or too-deep folders
    or under another root inside this one. A folder that cannot be listed fails the scan, and so does
    a scan that would delete more than half of the root's documents (two or more), unless
    ``request.force``. ``data_dir`` holds the registered roots and the remembered refusals.
    """
    started = time.perf_counter()
    report = ScanReport(job_id=request.job_id, root=request.root)
    roots = allowed_roots(settings, roots_file_in(data_dir))
    try:
        root = confine_to_roots(Path(request.root), roots, refused_roots(roots_file_in(data_dir)))
        if not root.is_dir():
            raise NotADirectoryError(f"{root} is not a folder")
        found = discover(root, roots, settings.max_file_bytes, settings.max_folder_depth)
    except (PathOutsideRootsError, OSError) as exc:
        return failed_scan(report, str(exc)), []
    current: dict[str, str] = {}
    sizes: dict[str, int] = {}
    refusals, failed_before = Refusals.of(data_dir), []
    for path in found.files:
        try:
            digest, size = file_digest(path, settings.max_file_bytes, roots)
        except RefusedFileError as exc:
            found.skip(path, str(refused(exc)))
        except OSError as exc:
            found.skip(path, f"cannot read: {exc.strerror or exc}")
        else:
            if (refusal := refusals.recall(str(path), digest)) is None:
                current[str(path)], sizes[str(path)] = digest, size
            elif refusal.status == "failed":
                failed_before.append(refusal)
            else:
                found.skipped.append(refusal)
    manifest = {
        uri: entry
        for uri, entry in store.manifest(str(root)).items()
        if walk_could_see(Path(uri), root, found.unseen, roots)
    }
    diff = diff_against_manifest(current, manifest)
    seen = {result.path for result in [*found.skipped, *failed_before]}
    vanished = [entry for entry in diff.deleted if entry.source_uri not in seen]
    if len(vanished) >= MIN_GUARDED_DELETIONS and len(vanished) * 2 > len(manifest) and not request.force:
        reason = (
            f"{len(vanished)} of the {len(manifest)} documents indexed from {root} are gone from it: "
            "nothing was deleted. If they really are gone (not on an unmounted disk), index again "
            "with --force"
        )
        return failed_scan(report, reason), []
    for entry in diff.deleted:
        store.delete_document(entry.document_id)
    report.root = str(root)
    report.skipped, report.skipped_files = len(found.skipped), found.skipped
    report.failures, report.failed = failed_before, len(failed_before)
    report.scanned = len(current) + len(found.skipped) + report.failed
    report.new, report.changed = len(diff.new), len(diff.changed)
    report.unchanged, report.deleted = len(diff.unchanged), len(diff.deleted)
    report.deleted_files = [entry.source_uri for entry in diff.deleted]
    report.elapsed_s = time.perf_counter() - started
    work = [
        IndexFileTask(
            job_id=request.job_id,
            root=str(root),
            path=path,
            document_id=document_id_for(path),
            content_hash=digest,
            size_bytes=sizes[path],
        )
        for path, digest in {**diff.new, **diff.changed}.items()
    ]
    return report, work


def failed_scan(report: ScanReport, reason: str) -> ScanReport:
    report.failed = 1
    report.failures.append(IndexFileResult(path=report.root, status="failed", reason=reason))
    return report


def walk_could_see(path: Path, root: Path, unseen: list[Path], roots: list[Path]) -> bool:
    """Whether the walk of ``root`` looks at ``path``: not hidden, not in a folder it did not enter,
    not under another root inside this one (that root's own scans keep its documents)."""
    if not path.is_relative_to(root):
        return False
    if any(part.startswith(".") for part in path.relative_to(root).parts):
        return False
    if any(path.is_relative_to(folder) for folder in unseen):
        return False
    return not any(
        other != root and other.is_relative_to(root) and path.is_relative_to(other) for other in roots
    )


def plan_batches(work: list[IndexFileTask], settings: IndexingSettings) -> list[IndexBatch]:
    """Consecutive files in batches of at most ``index_batch_files`` files and ``index_batch_bytes``
    bytes on disk; a file larger than the byte cap is a batch of its own."""
    batches: list[list[IndexFileTask]] = []
    size = 0
    for task in work:
        if (
            not batches
            or len(batches[-1]) >= settings.index_batch_files
            or size + task.size_bytes > settings.index_batch_bytes
        ):
            batches.append([])
            size = 0
        batches[-1].append(task)
        size += task.size_bytes
    return [IndexBatch(job_id=files[0].job_id, files=files) for files in batches]


def finish_report(report: ScanReport, results: list[IndexFileResult], elapsed_s: float) -> ScanReport:
    """Fold the per-file results into the scan's counts; skipped and failed files keep their reasons."""
    failures = [r for r in results if r.status == "failed"]
    skipped = [r for r in results if r.status == "skipped"]
    report.failures.extend(failures)
    report.failed += len(failures)
    report.skipped_files.extend(skipped)
    report.skipped += len(skipped)
    report.chunks = sum(r.chunks for r in results)
    report.elapsed_s = round(elapsed_s, 3)
    return report


def describe(report: ScanReport) -> str:
    return (
        f"{report.scanned} files: {report.new} new, {report.changed} changed, {report.unchanged} unchanged, "
        f"{report.deleted} deleted, {report.skipped} skipped, {report.failed} failed"
    )


def document_date(metadata: dict[str, str]) -> datetime | None:
    for key in ("updated", "created", "date"):
        value = metadata.get(key)
        if value:
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
    return None


def build_chunks(
    document: Document, loaded: LoadedDocument, token_spans: TokenSpans, settings: IndexingSettings
) -> list[Chunk]:
    spans = chunk_text(
        loaded.text,
        token_spans,
        settings.chunk_tokens,
        settings.chunk_overlap,
        markdown=loaded.kind in MARKUP_KINDS,
        page_ranges=loaded.page_ranges(),
    )
    date = document_date(loaded.metadata)
    source_url = perplexity_address(loaded.metadata.get("url"))
    return [
        Chunk(
            id=f"{document.id}:{ordinal}",
            document_id=document.id,
            ordinal=ordinal,
            text=loaded.text[span.start : span.end],
            heading_path=list(span.heading_path),
            page=loaded.page_at(span.start),
            char_start=span.start,
            char_end=span.end,
            title=document.title,
            source_uri=document.source_uri,
            kind=document.kind,
            space=loaded.metadata.get("space"),
            document_date=date,
            body_start=loaded.body_start,
            source_url=source_url,
            turn_question=turn_question(loaded.metadata, span.heading_path),
        )
        for ordinal, span in enumerate(spans)
    ]


def turn_question(metadata: Mapping[str, str], heading_path: Sequence[str]) -> str | None:
    """The question of the turn a passage is in, when its file is an exported thread (its front
    matter, ``metadata``, carries the exporter's mark). The exporter writes the title as the one ``#``
    heading and each turn's question as a ``##`` heading, and pushes an answer's own headings below
    that level, so the second heading over a passage is its turn's question whatever headings the
    answer has; a passage above the first turn, or in any other file, has none."""
    if metadata.get("source") != EXPORTED_THREAD_SOURCE or len(heading_path) < 2:
        return None
    return heading_path[1]


def load_file(
    task: IndexFileTask, settings: IndexingSettings, data_dir: Path
) -> LoadedDocument | IndexFileResult:
    """The file's text, or why it was skipped or failed (bad input, reported for this file alone)."""
    try:
        roots = allowed_roots(settings, roots_file_in(data_dir))
        # The folder resolved, the name not: a file swapped for a symlink is refused by the safe open.
        path = (
            confine_to_roots(Path(task.path).parent, roots, refused_roots(roots_file_in(data_dir)))
            / Path(task.path).name
        )
        return load_document(
            path,
            settings.max_file_bytes,
            roots,
            settings.max_document_chars,
            settings.pdf_time_limit_s,
        )
    except (SkippedFileError, LoadError) as exc:  # the file's content is refused: remember it
        status = "skipped" if isinstance(exc, SkippedFileError) else "failed"
        result = IndexFileResult(path=task.path, status=status, reason=str(exc))
        Refusals.of(data_dir).remember(result, task.content_hash)
        return result
    except (PathOutsideRootsError, OSError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) else f"cannot read: {exc.strerror or exc}"
        return IndexFileResult(path=task.path, status="failed", reason=reason)


def prepare_file(
    task: IndexFileTask, token_spans: TokenSpans, settings: IndexingSettings, data_dir: Path
) -> PreparedFile:
    """Load and chunk one file; a file that cannot be read or makes too many chunks comes back with
    no document and the result that says why (bad input, reported for this file alone)."""
    loaded = load_file(task, settings, data_dir)
    if isinstance(loaded, IndexFileResult):
        return PreparedFile(task, loaded)
    document = Document(
        id=task.document_id,
        source_uri=task.path,
        kind=loaded.kind,
        title=loaded.title,
        content_hash=loaded.content_hash,
        metadata=loaded.metadata,
    )
    chunks = build_chunks(document, loaded, token_spans, settings)
    if len(chunks) > settings.max_document_chunks:
        reason = f"{len(chunks):,} chunks, over the {settings.max_document_chunks:,} limit"
        result = IndexFileResult(
            path=task.path, status="skipped", reason=f"{reason} (HINDSIGHT_MAX_DOCUMENT_CHUNKS)"
        )
        return PreparedFile(task, result)
    indexed = IndexFileResult(path=task.path, status="indexed", chunks=len(chunks))
    return PreparedFile(task, indexed, document, chunks, [chunk.passage() for chunk in chunks])


def index_pipelined(
    batches: list[list[IndexFileTask]],
    store: VectorStore,
    embedder: Embedder,
    settings: IndexingSettings,
    data_dir: Path,
    on_chunks: ChunkProgress | None = None,
) -> list[BatchOutcome]:
    """Each batch's results, or the backend error that stopped it, with loading, embedding and
    writing overlapped (``services.indexer.stream``): one store write per batch; ``on_chunks`` hears
    of the chunks embedded of a file too big for one embedder call."""

    def prepare(task: IndexFileTask) -> PreparedFile:
        return prepare_file(task, embedder.token_spans, settings, data_dir)

    return index_batches(batches, prepare, store, embedder, settings, on_chunks)


def index_batch(
    tasks: list[IndexFileTask],
    store: VectorStore,
    embedder: Embedder,
    settings: IndexingSettings,
    data_dir: Path,
    on_chunks: ChunkProgress | None = None,
) -> list[IndexFileResult]:
    """Load and chunk the files (a thread ahead of the embedder), embed their chunks in calls of
    about ``index_embed_tokens`` tokens, write all documents in one store write.

    Returns one result per file, in order. A file that cannot be loaded is reported alone and its
    old chunks are deleted. Backend errors propagate; running the batch again is safe, since every
    write replaces or deletes by document id and so leaves the rows one run would.
    """
    (outcome,) = index_pipelined([tasks], store, embedder, settings, data_dir, on_chunks)
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


def index_one_by_one(
    tasks: list[IndexFileTask],
    store: VectorStore,
    embedder: Embedder,
    settings: IndexingSettings,
    data_dir: Path,
    why: str = "",
) -> Iterator[IndexFileResult]:
    """Each file as a batch of its own, a backend error failing only that file (with ``why`` before
    the error): after its batch failed, a file the backend rejects alone must not sink the others."""
    for task in tasks:
        try:
            yield from index_batch([task], store, embedder, settings, data_dir)
        except Exception as exc:  # a backend error on one file must not stop the others
            log.exception("indexing %s failed", task.path)
            yield IndexFileResult(path=task.path, status="failed", reason=f"{why}{type(exc).__name__}: {exc}")


def sync_root(
    request: IndexRequest,
    store: VectorStore,
    embedder: Embedder,
    settings: IndexingSettings,
    data_dir: Path,
) -> ScanReport:
    """The whole scan in this process, in the same batches as the workers (benchmarks, watch mode
    without a broker).

    A batch that hits a backend error is indexed again file by file, so the error is reported as
    the failure of the files it hits alone; the rest are still indexed.
    """
    started = time.perf_counter()
    report, work = begin_scan(request, store, settings, data_dir)
    results: list[IndexFileResult] = []
    batches = [batch.files for batch in plan_batches(work, settings)]
    for files, outcome in zip(
        batches, index_pipelined(batches, store, embedder, settings, data_dir), strict=True
    ):
        if isinstance(outcome, Exception):
            log.error(
                "indexing a batch of %d files failed; indexing them one by one", len(files), exc_info=outcome
            )
            outcome = list(index_one_by_one(files, store, embedder, settings, data_dir))
        results += outcome
    if work:
        store.refresh_indexes()
    return finish_report(report, results, time.perf_counter() - started)
