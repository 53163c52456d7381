"""Celery edge of the indexer: the scan fans out a chord of batches, and the report sums them up.

Every file finished (indexed, skipped or failed) advances the job's progress and appends an event
carrying the file's result and the job's rate and ETA, as soon as its batch is written (the batch
counted whole first: :func:`report_files`). A backend error retries the whole batch with
exponential backoff (safe: the store replaces by document id).
The last of ``index_max_retries`` retries (or, with retries off, the failed first attempt) indexes
the files one by one, so a file the backend keeps rejecting on its own is parked (reported as failed
with its reason) without the rest of its batch, and a backend that stays down parks every file;
either way the chord, and with it the rest of the scan, still completes.

A cancelled job (``DELETE /v1/index/{job}``) stops between batches: a batch not yet begun returns
no results at once (so the queue drains and the next job's scan is not stuck behind it), the batch
being indexed finishes and its files stay indexed, and the report, marked cancelled, ends the stream
with a ``failed`` event whose detail starts "cancelled".

A batch redelivered after its worker died (tasks are acknowledged late) is indexed again: the store
ends with the same chunks, and files already recorded are not counted twice in the progress (see
:class:`shared.index_jobs.ProgressTracker`), but their events are appended again.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import redis
from celery import Task, chord

from services.indexer.pipeline import (
    begin_scan,
    describe,
    finish_report,
    index_batch,
    index_one_by_one,
    plan_batches,
)
from services.indexer.stream import ChunkProgress
from shared.backends import get_embedder, get_store
from shared.celery_app import app
from shared.contracts import (
    IndexBatch,
    IndexFileResult,
    IndexFileTask,
    IndexProgress,
    IndexRequest,
    ScanReport,
)
from shared.events import EventStream, store_result
from shared.index_jobs import ProgressTracker, cancel_requested
from shared.interfaces import Embedder
from shared.redis_keys import index_report_key
from shared.settings import Settings, get_settings
from shared.stage_events import DocumentData, Stage
from shared.topology import INDEX_BATCH, INDEX_REPORT, INDEX_SCAN

log = logging.getLogger(__name__)


@app.task(name=INDEX_SCAN)
def scan(payload: dict[str, Any]) -> dict[str, Any]:
    request = IndexRequest.model_validate(payload)
    events = EventStream(request.job_id)
    started = time.time()
    settings = get_settings()
    if cancel_requested(request.job_id):
        return publish_report(ScanReport(job_id=request.job_id, root=request.root, cancelled=True))
    try:
        with events.stage(Stage.SCAN, f"diffing {request.root} against the manifest") as stage:
            report, work = begin_scan(request, get_store(), settings.indexing, settings.data_dir)
            stage.detail = describe(report)
            stage.data = report
    except Exception as exc:  # the job must still end with a report, or its readers wait forever
        reason = f"scan failed: {type(exc).__name__}: {exc}"
        failure = IndexFileResult(path=request.root, status="failed", reason=reason)
        report = ScanReport(job_id=request.job_id, root=request.root, failed=1, failures=[failure])
        return publish_report(report)
    progress = ProgressTracker(request.job_id).start(len(work), sum(task.size_bytes for task in work))
    events.emit(Stage.PROGRESS, "progress", f"{len(work)} files to index", data=progress)
    if not work:
        return publish_report(finish_report(report, [], time.time() - started))
    callback = index_report.s(report.to_payload(), started)
    chord(index_files.s(batch.to_payload()) for batch in plan_batches(work, settings.indexing))(callback)
    return report.to_payload()


@app.task(name=INDEX_BATCH, bind=True)
def index_files(self: Task, payload: dict[str, Any]) -> list[dict[str, Any]]:
    batch = IndexBatch.model_validate(payload)
    if cancel_requested(batch.job_id):
        return []
    settings = get_settings()
    attempts = self.request.retries + 1
    last = self.request.retries >= settings.indexing.index_max_retries
    if last and self.request.retries > 0:
        results = park_culprits(batch, settings, attempts)
    else:
        try:
            embedder, on_chunks = working(batch.job_id), chunk_progress(batch.job_id)
            results = index_batch(
                batch.files, get_store(), embedder, settings.indexing, settings.data_dir, on_chunks
            )
        except Exception as exc:
            if last:  # retries are off: this failed attempt is the only one
                results = park_culprits(batch, settings, attempts)
            else:
                backoff = settings.indexing.index_retry_backoff_s * 2**self.request.retries
                retry_later(batch, attempts, backoff, exc)
                raise self.retry(exc=exc, countdown=backoff) from exc
    for result in results:
        result.attempts = attempts
    report_files(batch, results)
    return [result.to_payload() for result in results]


def working(job_id: str) -> Embedder:
    """The embedder, its model loaded; the job's rates count from the first batch that got here."""
    embedder = get_embedder()
    ProgressTracker(job_id).working()
    return embedder


def chunk_progress(job_id: str) -> ChunkProgress:
    """Append a progress event each time some chunks of a file too big for one embedder call are
    embedded: the job's progress with that file's chunks embedded of its chunks."""
    progress, events = ProgressTracker(job_id), EventStream(job_id)

    def embedded(task: IndexFileTask, done: int, chunks: int) -> None:
        now = progress.read() or IndexProgress(job_id=job_id)
        update = {"current": task.path, "current_chunks_done": done, "current_chunks": chunks}
        detail = f"{Path(task.path).name}: {done}/{chunks} chunks embedded"
        events.emit(Stage.PROGRESS, "progress", detail, data=now.model_copy(update=update))

    return embedded


def report_files(batch: IndexBatch, results: list[IndexFileResult]) -> None:
    """Record each file's result in the job's progress, then append each file's event, unless Redis
    stays unwritable.

    The whole batch is counted before its first event, so every event of the batch carries the
    rate and ETA of the batch done (its files finished together: counting them one event at a time
    made the first read one file in the batch's whole time, an ETA many times too long), with the
    files done counted in order, one more each event.

    The batch's results still go to the job's report (through the chord, whose writes Celery retries
    far longer): a Redis that refuses writes for longer than ``OUTAGE_RETRY`` covers (its disk
    full, say) leaves the progress short of these files, not the job without its end.
    """
    progress, sizes = ProgressTracker(batch.job_id), {task.path: task.size_bytes for task in batch.files}
    try:
        files_done = [progress.record(result, sizes.get(result.path, 0)).done for result in results]
        batch_done = progress.read() or IndexProgress(job_id=batch.job_id)
        for result, done in zip(results, files_done, strict=True):
            as_of_file = batch_done.model_copy(update={"done": done, "current": result.path})
            report_file(batch.job_id, result, as_of_file)
    except redis.ConnectionError as exc:
        log.warning("progress of %d files of job %s not recorded: %s", len(results), batch.job_id, exc)


def park_culprits(batch: IndexBatch, settings: Settings, attempts: int) -> list[IndexFileResult]:
    """The last attempt of a failing batch: each file alone, so only files the backend still rejects
    on their own are parked, with the reason."""
    why = f"parked after {attempts} attempts: "
    return list(
        index_one_by_one(batch.files, get_store(), get_embedder(), settings.indexing, settings.data_dir, why)
    )


def retry_later(batch: IndexBatch, attempts: int, backoff: float, exc: Exception) -> None:
    """Tell the job's readers that the batch, naming its files, is tried again in ``backoff`` seconds."""
    first, more = Path(batch.files[0].path).name, len(batch.files) - 1
    names = f"{first} and {more} more" if more else first
    EventStream(batch.job_id).emit(
        Stage.DOCUMENT,
        "progress",
        f"{names}: retry {attempts} in {backoff:.1f}s: {exc}",
        data=DocumentData(paths=[task.path for task in batch.files]),
    )


def report_file(job_id: str, result: IndexFileResult, counts: IndexProgress) -> None:
    """Append the file's event, with the job's progress ``counts`` as of this file."""
    detail = f"{Path(result.path).name}: {result.chunks} chunks" if result.reason is None else result.reason
    EventStream(job_id).emit(
        Stage.DOCUMENT,
        "done" if result.status == "indexed" else result.status,
        detail,
        data=DocumentData(result=result, progress=counts),
    )


@app.task(name=INDEX_REPORT)
def index_report(
    batches: list[list[dict[str, Any]]], payload: dict[str, Any], started: float
) -> dict[str, Any]:
    report = ScanReport.model_validate(payload)
    report.cancelled = cancel_requested(report.job_id)
    files = [IndexFileResult.model_validate(r) for results in batches for r in results]
    get_store().refresh_indexes()  # before the job says done, so its files are searchable at full speed
    return publish_report(finish_report(report, files, time.time() - started))


def publish_report(report: ScanReport) -> dict[str, Any]:
    """Keep the final report for ``GET /v1/index/{job}`` and end the job's event stream with it: a
    cancelled job's last event is ``failed``, its detail starting "cancelled"."""
    store_result(index_report_key(report.job_id), report)
    summary = f"{describe(report)}; {report.chunks} chunks in {report.elapsed_s:.1f}s"
    EventStream(report.job_id).emit(
        Stage.INDEX,
        "failed" if report.scan_failed or report.cancelled else "done",
        f"cancelled: {summary}" if report.cancelled else summary,
        data=report,
    )
    return report.to_payload()
