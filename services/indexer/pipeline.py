"""Plan a scan of a folder and index one file: the logic behind ``index.scan`` and ``index.document``.

A scan diffs the files on disk against the store's manifest (SHA-256 of the bytes), deletes what
disappeared, and returns one task per new or changed file. Indexing a file replaces exactly that
document's chunks. A file that cannot be read loses its old chunks too, so the store never keeps
text the file no longer has; the file is tried again on the next scan and reported again until
it is fixed. Errors of the backends (store, embedder) are *not* caught here: they are transient,
and the Celery edge retries them with backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from services.indexer.chunking import chunk_text
from services.indexer.discovery import discover
from services.indexer.loaders import LoadedDocument, LoadError, SkippedFileError, load_document
from services.indexer.manifest_diff import diff_against_manifest, document_id_for, file_sha256
from shared.contracts import (
    Chunk,
    Document,
    IndexFileResult,
    IndexFileTask,
    IndexRequest,
    ScanReport,
    SourceKind,
)
from shared.index_jobs import PathOutsideRootsError, confine_to_roots
from shared.interfaces import Embedder, TokenSpans, VectorStore
from shared.settings import Settings

log = logging.getLogger(__name__)

MARKUP_KINDS = (SourceKind.MARKDOWN, SourceKind.HTML)


def begin_scan(
    request: IndexRequest, store: VectorStore, settings: Settings
) -> tuple[ScanReport, list[IndexFileTask]]:
    """Diff the root against the manifest, delete what is gone, and list the files to (re)index."""
    started = time.perf_counter()
    report = ScanReport(job_id=request.job_id, root=request.root)
    try:
        root = confine_to_roots(Path(request.root), settings.roots)
        if not root.is_dir():
            raise NotADirectoryError(f"{root} is not a folder")
    except (PathOutsideRootsError, OSError) as exc:
        report.failed = 1
        report.failures.append(IndexFileResult(path=request.root, status="failed", reason=str(exc)))
        return report, []
    found = discover(root, settings.roots, settings.max_file_bytes)
    current: dict[str, str] = {}
    for path in found.files:
        try:
            current[str(path)] = file_sha256(path)
        except OSError as exc:
            found.skip(path, f"cannot read: {exc.strerror or exc}")
    diff = diff_against_manifest(current, store.manifest(str(root)))
    for entry in diff.deleted:
        store.delete_document(entry.document_id)
    report.root = str(root)
    report.skipped, report.skipped_files = len(found.skipped), found.skipped
    report.scanned = len(current) + len(found.skipped)
    report.new, report.changed = len(diff.new), len(diff.changed)
    report.unchanged, report.deleted = len(diff.unchanged), len(diff.deleted)
    report.elapsed_s = time.perf_counter() - started
    work = [
        IndexFileTask(
            job_id=request.job_id,
            root=str(root),
            path=path,
            document_id=document_id_for(path),
            content_hash=digest,
        )
        for path, digest in {**diff.new, **diff.changed}.items()
    ]
    return report, work


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
    document: Document, loaded: LoadedDocument, token_spans: TokenSpans, settings: Settings
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
        )
        for ordinal, span in enumerate(spans)
    ]


def index_file(
    task: IndexFileTask, store: VectorStore, embedder: Embedder, settings: Settings
) -> IndexFileResult:
    """Load, chunk, embed and store one file. Bad input is reported for this file alone; backend
    errors propagate so the caller can retry them."""
    try:
        path = confine_to_roots(Path(task.path), settings.roots)
        loaded = load_document(path, settings.max_file_bytes)
    except SkippedFileError as exc:
        store.delete_document(task.document_id)
        return IndexFileResult(path=task.path, status="skipped", reason=str(exc))
    except (LoadError, PathOutsideRootsError, OSError) as exc:
        store.delete_document(task.document_id)
        reason = str(exc) if isinstance(exc, ValueError) else f"cannot read: {exc.strerror or exc}"
        return IndexFileResult(path=task.path, status="failed", reason=reason)
    document = Document(
        id=task.document_id,
        source_uri=task.path,
        kind=loaded.kind,
        title=loaded.title,
        content_hash=task.content_hash,
        metadata=loaded.metadata,
    )
    chunks = build_chunks(document, loaded, embedder.token_spans, settings)
    vectors = embedder.embed_documents([passage_for_embedding(chunk) for chunk in chunks])
    store.replace_document(document, chunks, vectors)
    return IndexFileResult(path=task.path, status="indexed", chunks=len(chunks))


def passage_for_embedding(chunk: Chunk) -> str:
    """Title and heading path give a chunk its context, as the reader of the section sees it."""
    return "\n".join([chunk.title, *chunk.heading_path, chunk.text])


def sync_root(
    request: IndexRequest,
    store: VectorStore,
    embedder: Embedder,
    settings: Settings,
    on_result: Callable[[IndexFileResult], None] | None = None,
) -> ScanReport:
    """The whole scan in this process, one file after another (benchmarks, watch mode without a broker).

    A backend error on one file is reported as that file's failure; the rest are still indexed.
    """
    started = time.perf_counter()
    report, work = begin_scan(request, store, settings)
    results = []
    for task in work:
        try:
            result = index_file(task, store, embedder, settings)
        except Exception as exc:  # a backend error on one file must not stop the others
            log.exception("indexing %s failed", task.path)
            result = IndexFileResult(path=task.path, status="failed", reason=f"{type(exc).__name__}: {exc}")
        results.append(result)
        if on_result is not None:
            on_result(result)
    return finish_report(report, results, time.perf_counter() - started)
