"""How the CLI's progress bar reads an index job's events: totals, done, rate, ETA, reasons."""

from __future__ import annotations

from cli.actions.index import bar_update, format_eta
from shared.contracts import Event, IndexFileResult, IndexProgress
from shared.stage_events import DocumentData


def event(stage: str, status: str, detail: str = "", data: dict | None = None) -> Event:  # type: ignore[type-arg]
    return Event(stream_id="job", stage=stage, status=status, detail=detail, data=data or {})  # type: ignore[arg-type]


def test_progress_event_sets_the_total() -> None:
    started = IndexProgress(job_id="job", total=12).to_payload()
    update = bar_update(event("progress", "progress", data=started))
    assert update is not None and update.total == 12


def test_document_event_moves_the_bar_and_shows_rate_eta_and_failures() -> None:
    progress = IndexProgress(
        job_id="job", total=10, done=4, current="/d/paper.pdf", rate_files_per_s=2.5, eta_s=75
    )
    result = IndexFileResult(path="/d/paper.pdf", status="failed", reason="encrypted PDF: needs a password")
    update = bar_update(
        event("document", "failed", data={"result": result.to_payload(), "progress": progress.to_payload()})
    )
    assert update is not None
    assert (update.completed, update.total, update.description) == (4, 10, "paper.pdf")
    assert update.rate == "2.5 files/s" and update.eta == "1m15s"
    assert update.line is not None and "encrypted PDF" in update.line


def test_retries_are_shown_and_other_events_ignored() -> None:
    retry = bar_update(event("document", "progress", "a.md: retry 1 in 2.0s: timeout"))
    assert retry is not None and retry.line is not None and "retry 1" in retry.line
    assert bar_update(event("scan", "started")) is None
    assert format_eta(None) == "–" and format_eta(9.4) == "9s"


def test_a_retried_batch_as_the_indexer_emits_it_is_a_retry_line_not_a_file_done() -> None:
    emitted = DocumentData(paths=["/d/a.md"]).to_payload()
    retry = bar_update(event("document", "progress", "a.md: retry 1 in 2.0s: timeout", emitted))
    assert (
        retry is not None and retry.completed is None and retry.line is not None and "retry 1" in retry.line
    )
