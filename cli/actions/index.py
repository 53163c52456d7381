"""Index a folder through the gateway with a live progress bar, and keep it in sync on request.

The bar follows the job's event stream: files done of the total, the rate and the ETA the indexer
computes, the file being indexed; skipped and failed files are printed with their reason as they
happen and listed again in the final report. When the output is not a terminal (piped, ``| tee``,
a log file) there is no bar: each event the bar would show is one plain line as it happens.
Ctrl-C while a job runs cancels it (files already indexed stay indexed), prints how far it got and
exits 130. Watching re-syncs the folder after every settled burst of changes
(:class:`shared.folder_watch.RootWatcher`) until Ctrl-C.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn

from cli.client import GatewayClient, default_client
from cli.console import console, shown
from shared.contracts import Event, IndexProgress, ScanReport
from shared.index_jobs import PathOutsideRootsError, register_root
from shared.settings import get_settings
from shared.stage_events import DocumentData, Stage

SKIPPED_SHOWN = 20
INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT)


@dataclass
class BarUpdate:
    """What one event changes on the progress bar."""

    description: str | None = None
    total: int | None = None
    completed: int | None = None
    rate: str | None = None
    eta: str | None = None
    line: str | None = None


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_size(size_bytes: float) -> str:
    """``size_bytes`` in B, kB or MB (powers of 1000)."""
    for unit in ("B", "kB"):
        if size_bytes < 1000:
            return f"{size_bytes:.0f} {unit}" if unit == "B" else f"{size_bytes:.1f} {unit}"
        size_bytes /= 1000
    return f"{size_bytes:.1f} MB"


def format_rate(progress: IndexProgress) -> str:
    """The job's rates as the bar shows them: bytes a second (what the ETA follows), files a second."""
    if progress.rate_bytes_per_s <= 0:
        return "– files/s"
    return f"{format_size(progress.rate_bytes_per_s)}/s · {progress.rate_files_per_s:.1f} files/s"


def bar_update(event: Event) -> BarUpdate | None:
    """Translate an index job event into a bar update (``None`` for events the bar ignores)."""
    if event.stage == Stage.SCAN and event.status == "done":
        return BarUpdate(description=shown(event.detail))
    if event.stage == Stage.PROGRESS:
        progress = IndexProgress.model_validate(event.data)
        if progress.current_chunks:  # some chunks of a big file embedded
            name = Path(progress.current or "").name
            return BarUpdate(
                description=shown(f"{name} {progress.current_chunks_done}/{progress.current_chunks} chunks")
            )
        return BarUpdate(total=progress.total, description="indexing")
    document = DocumentData.model_validate(event.data) if event.stage == Stage.DOCUMENT else None
    if document is not None and document.progress is not None and document.result is not None:
        progress, result = document.progress, document.result
        line = None
        if result.status != "indexed":
            colour = "red" if result.status == "failed" else "yellow"
            line = f"[{colour}]{result.status}[/] {shown(result.path)}: {shown(result.reason)}"
        return BarUpdate(
            description=shown(Path(progress.current or "").name),
            total=progress.total,
            completed=progress.done,
            rate=format_rate(progress),
            eta=format_eta(progress.eta_s),
            line=line,
        )
    if document is not None and event.status == "progress":
        return BarUpdate(line=f"[yellow]retrying[/] {shown(event.detail)}")
    return None


def plain_line(update: BarUpdate) -> str | None:
    """The line printed for a bar update when the output is not a terminal (``None``: nothing new)."""
    if update.completed is not None and update.total is not None:
        done = f"{update.completed}/{update.total} files"
        return f"{done} · {update.rate} · ETA {update.eta} · {update.description}"
    return update.description if update.total is None else f"{update.total} files to index"


def follow_plainly(events: Iterable[Event]) -> None:
    for event in events:
        update = bar_update(event)
        if update is None:
            continue
        if update.line:
            console.print(update.line, highlight=False, soft_wrap=True)
        if (line := plain_line(update)) is not None:
            console.print(line, highlight=False, soft_wrap=True, markup=False)


def follow_job(events: Iterable[Event]) -> None:
    """An index job's progress, from its ``events``, as a live bar in a terminal, else as plain lines."""
    if not console.is_terminal:
        follow_plainly(events)
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description:<32.32}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TextColumn("ETA {task.fields[eta]}"),
    )
    with Progress(*columns, console=console) as bar:
        task: TaskID = bar.add_task("scanning", total=None, rate="", eta="–")
        for event in events:
            update = bar_update(event)
            if update is None:
                continue
            if update.line:
                bar.console.print(update.line)
            bar.update(task, description=update.description, total=update.total, completed=update.completed)
            if update.rate is not None:
                bar.update(task, rate=update.rate, eta=update.eta)


def render_report(report: ScanReport) -> None:
    console.print(
        f"scanned {report.scanned}: {report.new} new, {report.changed} changed, "
        f"{report.unchanged} unchanged, {report.deleted} deleted, {report.skipped} skipped, "
        f"{report.failed} failed; {report.chunks} chunks in {report.elapsed_s:.1f}s"
    )
    for failure in report.failures:
        console.print(f"[red]failed[/red] {shown(failure.path)}: {shown(failure.reason)}")
    for deleted in report.deleted_files:
        console.print(f"[magenta]deleted[/magenta] {shown(deleted)}")
    for skipped in report.skipped_files[:SKIPPED_SHOWN]:
        console.print(f"[yellow]skipped[/yellow] {shown(skipped.path)}: {shown(skipped.reason)}")
    if report.skipped > SKIPPED_SHOWN:
        console.print(f"[yellow]… and {report.skipped - SKIPPED_SHOWN} more skipped[/yellow]")


def index_when_running(root: Path, not_running: str) -> None:
    """Index ``root`` through the gateway's index job with its progress bar; when Hindsight is not
    running, print ``not_running`` (what to run instead) and re-raise the connection error."""
    try:
        run_index(default_client(), root)
    except httpx.TransportError:
        console.print(not_running, soft_wrap=True)
        raise


def run_index(
    client: GatewayClient, root: Path, force: bool = False, again: bool = False
) -> ScanReport | None:
    """Make ``root`` a root Hindsight may read (``again``: re-pin it after the user replaced it),
    start a scan of it, show its progress, print and return its report; ``force`` lets the scan
    delete more than half of the folder's documents. Ctrl-C (``KeyboardInterrupt``) cancels the job,
    says how far it got, and is raised again."""
    try:
        root = register_root(get_settings().roots_file, root, again)
    except PathOutsideRootsError as exc:
        console.print(f"[red]not indexed[/red]: {shown(exc)}")
        return None
    job_id = client.index(str(root), force)
    try:
        follow_job(client.index_events(job_id))
    except KeyboardInterrupt:
        cancel_job(client, job_id)
        raise
    report = client.index_report(job_id)
    if report is not None:
        render_report(report)
    return report


def cancel_job(client: GatewayClient, job_id: str) -> None:
    """Cancel the job after Ctrl-C and say how far it got (or, had it ended, its report)."""
    progress = client.cancel_index(job_id)
    if progress is None:  # it had ended: its report says how
        report = client.index_report(job_id)
        if report is not None:
            render_report(report)
    else:
        console.print(
            f"cancelled: {progress.done} of {progress.total} files indexed, and the files being embedded "
            "now finish; run the same command to finish the rest",
            highlight=False,
        )


def index_and_watch(client: GatewayClient, root: Path, debounce_ms: int, again: bool = False) -> None:
    """Index ``root``, then re-sync it after every settled burst of changes until Ctrl-C (which also
    cancels a re-sync under way). Ctrl-C during the first index cancels it and propagates."""
    from shared.folder_watch import RootWatcher

    run_index(client, root, again=again)
    root = root.resolve()  # the folder just registered; the watcher itself never follows a link
    console.print(f"[cyan]watching[/cyan] {shown(root)} (Ctrl-C to stop)")
    watcher = RootWatcher(lambda: [root], lambda changed: run_index(client, changed), debounce_ms=debounce_ms)
    try:
        watcher.run()
    except KeyboardInterrupt:
        console.print("stopped watching")
    finally:
        watcher.stop_event.set()
