"""Ask a question through the gateway: each stage as it finishes, then the cited answer."""

from __future__ import annotations

import time

from rich.markdown import Markdown

from cli.client import default_client
from cli.console import console
from shared.contracts import Answer, Citation, Event, QuestionOptions, Strategy


def ask_question(question: str, strategy: Strategy | None = None) -> Answer | None:
    """Ask; show each stage as it finishes under a spinner, then the cited answer (``None`` if it failed)."""
    client = default_client()
    started = time.perf_counter()
    question_id = client.ask(question, QuestionOptions(strategy=strategy))
    answer = None
    with console.status("planning…") as spinner:
        for event in client.question_events(question_id):
            if event.stage == "answer" and event.status == "failed":
                console.print(f"[red]failed[/red]: {event.detail}")
                return None
            if event.stage == "answer":
                answer = Answer.model_validate(event.data["answer"])
            else:
                render_event(event)
                spinner.update(f"{event.stage} {event.status}…")
    if answer:
        render_answer(answer)
    console.print(f"[dim]{(time.perf_counter() - started):.1f}s[/dim]")
    return answer


def render_event(event: Event) -> None:
    colour = {"failed": "red", "done": "green", "skipped": "yellow"}.get(event.status, "cyan")
    elapsed = f" ({event.elapsed_ms:.0f} ms)" if event.elapsed_ms else ""
    console.print(f"[{colour}]{event.stage:>8} {event.status:<8}[/{colour}] {event.detail}{elapsed}")


def render_answer(answer: Answer) -> None:
    console.rule("answer")
    console.print(Markdown(answer.markdown))
    if answer.citations:
        console.rule("citations")
    for c in answer.citations:
        console.print(citation_line(c), highlight=False)


def citation_line(c: Citation) -> str:
    """``[n] title — path:line`` (what editors and terminals open), or the page for a PDF."""
    where = f"{c.source_uri}:{c.line}" if c.line else c.source_uri + (f", p. {c.page}" if c.page else "")
    mark = "verified" if c.verified else "[red]unverified[/red]"
    return f"[{c.number}] {c.title} — {where} ({mark})"
