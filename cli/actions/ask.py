"""Ask a question through the gateway: each stage as it finishes, then the cited answer."""

from __future__ import annotations

import time

from rich.markdown import Markdown

from cli.client import GatewayClient, default_client
from cli.console import console, error_console
from shared.contracts import Answer, Event, QuestionOptions, Strategy
from shared.events import TERMINAL_STAGE, WAITING_STAGE


def ask_question(question: str, strategy: Strategy | None = None, as_json: bool = False) -> Answer | None:
    """Ask; show each stage as it finishes under a spinner, then the cited answer (``None`` if it failed
    or was cancelled). With ``as_json`` only the answer is printed, as JSON. Ctrl-C cancels the question
    on the gateway too, so no worker keeps spending time on it."""
    client = default_client()
    started = time.perf_counter()
    question_id = client.ask(question, QuestionOptions(strategy=strategy))
    try:
        answer = follow_question(client, question_id, quiet=as_json)
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
    console.print(f"[dim]{(time.perf_counter() - started):.1f}s[/dim]")
    return answer


def follow_question(client: GatewayClient, question_id: str, quiet: bool) -> Answer | None:
    """The question's answer once its stream ends; each stage printed as it finishes unless ``quiet``.
    A failure is printed (to stderr when ``quiet``) and gives ``None``."""
    with console.status("planning…") as spinner:
        for event in client.question_events(question_id):
            if event.stage == TERMINAL_STAGE and event.status == "done":
                return Answer.model_validate(event.data["answer"])
            if event.stage == TERMINAL_STAGE:
                (error_console if quiet else console).print(f"[red]failed[/red]: {event.detail}")
                return None
            if event.stage == WAITING_STAGE:
                spinner.update(f"{event.detail} (Ctrl-C cancels)")
                continue
            if not quiet:
                render_event(event)
            spinner.update(f"{event.stage} {event.status}…")
    return None


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
        where = f"p. {c.page}, " if c.page else ""
        mark = "verified" if c.verified else "[red]unverified[/red]"
        console.print(
            f"[{c.number}] {c.title} — {c.source_uri} ({where}chars {c.char_start}-{c.char_end}, {mark})"
        )
