"""Celery edge of the indexer: ``index.scan`` fans out ``index.document`` and ``index.report`` sums up.

Every file finished (indexed, skipped or failed) advances the job's progress and appends an event
carrying the file's result and the job's rate and ETA. A backend error on a file is retried with
exponential backoff; after ``index_max_retries`` the file is parked (reported as failed with its
reason) so the chord, and with it the rest of the scan, still completes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from celery import Task, chord

from services.indexer.pipeline import begin_scan, describe, finish_report, index_file
from shared.backends import get_embedder, get_store
from shared.celery_app import app
from shared.contracts import IndexFileResult, IndexFileTask, IndexRequest, ScanReport
from shared.events import EventStream, index_report_key, store_result
from shared.index_jobs import ProgressTracker
from shared.settings import get_settings


@app.task(name="index.scan")
def scan(payload: dict[str, Any]) -> dict[str, Any]:
    request = IndexRequest.model_validate(payload)
    events = EventStream(request.job_id)
    started = time.time()
    try:
        with events.stage("scan", f"diffing {request.root} against the manifest") as stage:
            report, work = begin_scan(request, get_store(), get_settings())
            stage.detail = describe(report)
            stage.data = report.to_payload()
    except Exception as exc:  # the job must still end with a report, or its readers wait forever
        reason = f"scan failed: {type(exc).__name__}: {exc}"
        failure = IndexFileResult(path=request.root, status="failed", reason=reason)
        report = ScanReport(job_id=request.job_id, root=request.root, failed=1, failures=[failure])
        return publish_report(report)
    progress = ProgressTracker(request.job_id).start(len(work))
    events.emit("progress", "progress", f"{len(work)} files to index", data=progress.to_payload())
    if not work:
        return publish_report(finish_report(report, [], time.time() - started))
    callback = index_report.s(report.to_payload(), started)
    chord(index_document.s(task.to_payload()) for task in work)(callback)
    return report.to_payload()


@app.task(name="index.document", bind=True)
def index_document(self: Task, payload: dict[str, Any]) -> dict[str, Any]:
    task = IndexFileTask.model_validate(payload)
    settings = get_settings()
    attempts = self.request.retries + 1
    try:
        result = index_file(task, get_store(), get_embedder(), settings)
    except Exception as exc:
        if self.request.retries < settings.index_max_retries:
            backoff = settings.index_retry_backoff_s * 2**self.request.retries
            EventStream(task.job_id).emit(
                "document", "progress", f"{Path(task.path).name}: retry {attempts} in {backoff:.1f}s: {exc}"
            )
            raise self.retry(exc=exc, countdown=backoff) from exc
        result = IndexFileResult(
            path=task.path,
            status="failed",
            reason=f"parked after {attempts} attempts: {type(exc).__name__}: {exc}",
        )
    result.attempts = attempts
    progress = ProgressTracker(task.job_id).record(result)
    detail = f"{Path(task.path).name}: {result.chunks} chunks" if result.reason is None else result.reason
    EventStream(task.job_id).emit(
        "document",
        "done" if result.status == "indexed" else result.status,
        detail,
        data={"result": result.to_payload(), "progress": progress.to_payload()},
    )
    return result.to_payload()


@app.task(name="index.report")
def index_report(results: list[dict[str, Any]], payload: dict[str, Any], started: float) -> dict[str, Any]:
    report = ScanReport.model_validate(payload)
    files = [IndexFileResult.model_validate(r) for r in results]
    return publish_report(finish_report(report, files, time.time() - started))


def publish_report(report: ScanReport) -> dict[str, Any]:
    """Keep the final report for ``GET /v1/index/{job}`` and end the job's event stream with it."""
    store_result(index_report_key(report.job_id), report)
    scan_failed = report.scanned == 0 and report.failed > 0
    EventStream(report.job_id).emit(
        "index",
        "failed" if scan_failed else "done",
        f"{describe(report)}; {report.chunks} chunks in {report.elapsed_s:.1f}s",
        data=report.to_payload(),
    )
    return report.to_payload()
