"""Celery edge of the indexer: ``index.scan`` fans out ``index.document`` and ``index.report`` sums up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery import chord

from services.indexer.manifest_diff import document_id_for
from services.indexer.pipeline import PathOutsideRootsError, confine_to_roots, index_file, plan_scan
from shared.backends import get_embedder, get_store
from shared.celery_app import app
from shared.contracts import IndexFileResult, IndexFileTask, IndexRequest, ScanReport
from shared.events import EventStream, index_report_key, store_result
from shared.settings import get_settings


@app.task(name="index.scan")
def scan(payload: dict[str, Any]) -> dict[str, Any]:
    request = IndexRequest.model_validate(payload)
    events = EventStream(request.job_id)
    report = ScanReport(job_id=request.job_id, root=request.root)
    try:
        root = confine_to_roots(Path(request.root), get_settings().roots)
    except PathOutsideRootsError as exc:
        report.failed = 1
        report.failures.append(IndexFileResult(path=request.root, status="failed", reason=str(exc)))
        return finish_report(report, [])
    store = get_store()
    with events.stage("scan", f"diffing {root} against the manifest") as stage:
        diff = plan_scan(root, store)
        for entry in diff.deleted:
            store.delete_document(entry.document_id)
        report.scanned = len(diff.new) + len(diff.changed) + len(diff.unchanged)
        report.new, report.changed = len(diff.new), len(diff.changed)
        report.unchanged, report.deleted = len(diff.unchanged), len(diff.deleted)
        stage.detail = (
            f"{report.scanned} files: {report.new} new, {report.changed} changed, "
            f"{report.unchanged} unchanged, {report.deleted} deleted"
        )
        stage.data = report.to_payload()
    work = [
        IndexFileTask(
            job_id=request.job_id,
            root=str(root),
            path=path,
            document_id=document_id_for(path),
            content_hash=digest,
        ).to_payload()
        for path, digest in {**diff.new, **diff.changed}.items()
    ]
    if not work:
        return finish_report(report, [])
    chord(index_document.s(item) for item in work)(index_report.s(report.to_payload()))
    return report.to_payload()


@app.task(name="index.document")
def index_document(payload: dict[str, Any]) -> dict[str, Any]:
    task = IndexFileTask.model_validate(payload)
    result = index_file(task, get_store(), get_embedder(), get_settings())
    EventStream(task.job_id).emit(
        "document",
        "done" if result.status == "indexed" else "failed",
        f"{Path(task.path).name}: {result.chunks} chunks" if result.reason is None else result.reason,
        data=result.to_payload(),
    )
    return result.to_payload()


@app.task(name="index.report")
def index_report(results: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
    report = ScanReport.model_validate(payload)
    return finish_report(report, [IndexFileResult.model_validate(r) for r in results])


def finish_report(report: ScanReport, results: list[IndexFileResult]) -> dict[str, Any]:
    failures = [r for r in results if r.status == "failed"]
    report.failures.extend(failures)
    report.failed += len(failures)
    report.chunks = sum(r.chunks for r in results)
    store_result(index_report_key(report.job_id), report)
    EventStream(report.job_id).emit(
        "index",
        "done",
        f"indexed {report.chunks} chunks; {report.failed} failed",
        data=report.to_payload(),
    )
    return report.to_payload()
