"""How the CLI's progress bar reads an index job's events: totals, done, rate, ETA, reasons; and the
arithmetic of the rate and ETA it shows (``shared.index_jobs.progress_from``)."""

from __future__ import annotations

from cli.actions.index import bar_update, format_eta, format_rate, plain_line
from shared.contracts import Event, IndexFileResult, IndexProgress
from shared.index_jobs import progress_from
from shared.stage_events import DocumentData


def event(stage: str, status: str, detail: str = "", data: dict | None = None) -> Event:  # type: ignore[type-arg]
    return Event(stream_id="job", stage=stage, status=status, detail=detail, data=data or {})  # type: ignore[arg-type]


def test_progress_event_sets_the_total() -> None:
    started = IndexProgress(job_id="job", total=12).to_payload()
    update = bar_update(event("progress", "progress", data=started))
    assert update is not None and update.total == 12


def test_document_event_moves_the_bar_and_shows_rate_eta_and_failures() -> None:
    progress = IndexProgress(
        job_id="job",
        total=10,
        done=4,
        current="/d/paper.pdf",
        rate_files_per_s=2.5,
        rate_bytes_per_s=12_500,
        eta_s=75,
    )
    result = IndexFileResult(path="/d/paper.pdf", status="failed", reason="encrypted PDF: needs a password")
    update = bar_update(
        event("document", "failed", data={"result": result.to_payload(), "progress": progress.to_payload()})
    )
    assert update is not None
    assert (update.completed, update.total, update.description) == (4, 10, "paper.pdf")
    assert update.rate == "12.5 kB/s · 2.5 files/s" and update.eta == "1m15s"
    assert update.line is not None and "encrypted PDF" in update.line


def test_chunks_embedded_of_a_big_file_move_the_description_not_the_files_done() -> None:
    progress = IndexProgress(
        job_id="job", total=3, done=1, current="/d/manual.md", current_chunks_done=120, current_chunks=900
    )
    update = bar_update(event("progress", "progress", data=progress.to_payload()))
    assert update is not None and (update.total, update.completed) == (None, None)
    assert update.description == "manual.md 120/900 chunks" and plain_line(update) == update.description


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


def counters(**values: float) -> dict[str, str]:
    """A job's progress hash as Redis returns it (strings)."""
    return {name: str(value) for name, value in values.items()}


def test_a_batch_of_many_small_files_done_at_once_reads_no_more_files_a_second_than_exist() -> None:
    # 151 files, 3 MB in all; the first batch (32 files of 2 kB) took 20 s and finished at once
    job = counters(total=151, total_bytes=3_000_000, t0=100, t1=110, done=32, done_bytes=64_000)
    for now in (130.0, 130.001, 131.0):  # the batch's 32 events are read in the same instant
        progress = progress_from("job", job, now)
        assert progress.rate_files_per_s <= progress.total / (now - 110), progress
    at_end = progress_from("job", job, 130.0)
    assert at_end.rate_files_per_s == 1.6 and at_end.rate_bytes_per_s == 3_200 and at_end.eta_s == 917.5


def test_the_eta_follows_bytes_so_a_big_file_left_weighs_more_than_many_small_ones_done() -> None:
    # 100 small files (1 kB each) done in 10 s; one 900 kB file left: 90 s more, not 0.1 s
    job = counters(total=101, total_bytes=1_000_000, t0=0, t1=0, done=100, done_bytes=100_000)
    progress = progress_from("job", job, 10.0)
    assert progress.rate_files_per_s == 10 and progress.eta_s == 90.0


def test_before_a_file_is_done_or_a_batch_began_there_is_no_rate_and_no_eta() -> None:
    waiting = progress_from("job", counters(total=5, total_bytes=500, t0=100, done=0, done_bytes=0), 150.0)
    begun = progress_from("job", counters(total=5, total_bytes=500, t0=100, t1=140, done=0), 150.0)
    for progress in (waiting, begun):
        assert progress.eta_s is None and progress.rate_bytes_per_s == 0 and progress.elapsed_s == 50
        assert format_rate(progress) == "– files/s"
