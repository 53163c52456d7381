"""Ask a question through the gateway: each stage as it finishes, then the cited answer."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.markdown import Markdown

from cli.client import GatewayClient, default_client
from cli.console import console, counted, error_console, plain, shown
from shared.contracts import Answer, Citation, Event, QuestionOptions, Strategy
from shared.events import TERMINAL_STAGE, WAITING_STAGE


def ask_question(
    question: str, strategy: Strategy | None = None, as_json: bool = False, stages: bool = False
) -> Answer | None:
    """Ask; a spinner says which stage runs, then the cited answer and a one-line summary (``None`` if
    it failed or was cancelled). ``stages`` prints each stage's detailed event as it finishes; with
    ``as_json`` only the answer is printed, as JSON. Ctrl-C cancels the question on the gateway too,
    so no worker keeps spending time on it."""
    client = default_client()
    started = time.perf_counter()
    question_id = client.ask(question, QuestionOptions(strategy=strategy))
    progress = QuestionProgress()
    try:
        answer = follow_question(client, question_id, progress, quiet=as_json, stages=stages)
    except KeyboardInterrupt:
        client.cancel(question_id)
        console.print("[yellow]cancelled[/yellow]")
        return None
    if answer is None:
        return None
    if as_json:
        print(answer.model_dump_json(indent=2))
        return answer
    render_answer(answer)
    console.print(f"[dim]{progress.summary(answer, time.perf_counter() - started)}[/dim]")
    return answer


STAGE_WORDS = {
    "plan": "understanding the question",
    "search": "searching your notes",
    "rerank": "ranking the passages",
    "map": "reading the passages",
    "reduce": "writing the answer",
}


@dataclass
class QuestionProgress:
    """What the stream told about the question so far: how many passages the search found."""

    passages: int | None = None

    def record(self, event: Event) -> None:
        if event.stage == "search" and "candidates" in event.data:
            self.passages = int(event.data["candidates"])

    def summary(self, answer: Answer, elapsed_s: float) -> str:
        """ "Searched your notes · 8 passages · 3 sources · 1.7 s"."""
        parts = ["Searched your notes"]
        if self.passages is not None:
            parts.append(counted(self.passages, "passage"))
        parts += [counted(len(answer.sources_explored), "source"), f"{elapsed_s:.1f} s"]
        return " · ".join(parts)


def follow_question(
    client: GatewayClient, question_id: str, progress: QuestionProgress, quiet: bool, stages: bool
) -> Answer | None:
    """The question's answer once its stream ends; with ``stages`` (and not ``quiet``) each stage's
    event is printed as it finishes. A failure is printed (to stderr when ``quiet``) and gives ``None``."""
    with console.status("understanding the question…") as spinner:
        for event in client.question_events(question_id):
            if event.stage == TERMINAL_STAGE and event.status == "done":
                return Answer.model_validate(event.data["answer"])
            if event.stage == TERMINAL_STAGE:
                (error_console if quiet else console).print(f"[red]failed[/red]: {shown(event.detail)}")
                return None
            if event.stage == WAITING_STAGE:
                spinner.update(f"{shown(event.detail)} (Ctrl-C cancels)")
                continue
            progress.record(event)
            if stages and not quiet:
                render_event(event)
            spinner.update(f"{STAGE_WORDS.get(event.stage, event.stage)}…")
    return None


def render_event(event: Event) -> None:
    colour = {"failed": "red", "done": "green", "skipped": "yellow"}.get(event.status, "cyan")
    elapsed = f" ({event.elapsed_ms:.0f} ms)" if event.elapsed_ms else ""
    console.print(f"[{colour}]{event.stage:>8} {event.status:<8}[/{colour}] {shown(event.detail)}{elapsed}")


def render_answer(answer: Answer) -> None:
    console.rule("answer")
    console.print(Markdown(plain(answer.markdown), hyperlinks=False))
    if answer.citations:
        console.rule("citations")
    for c in answer.citations:
        console.print(citation_line(c), highlight=False)


def citation_line(c: Citation) -> str:
    """``[n] title — path:line`` (what editors and terminals open), or the page for a PDF."""
    where = f"{c.source_uri}:{c.line}" if c.line else c.source_uri + (f", p. {c.page}" if c.page else "")
    mark = "verified" if c.verified else "[red]unverified[/red]"
    return f"[{c.number}] {shown(c.title)} — {shown(where)} ({mark})"
