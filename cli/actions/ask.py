"""Ask a question through the gateway: each stage as it finishes, then the cited answer."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from rich.markdown import Markdown

from cli.actions.index import run_index
from cli.client import GatewayClient, GatewayError, default_client
from cli.console import console, counted, error_console, plain, shown
from shared.citations import checks_label, quote_label, relevance_label, source_line
from shared.contracts import Answer, Citation, Event, QuestionOptions, Strategy
from shared.events import TERMINAL_STAGE, WAITING_STAGE
from shared.notes import save_note
from shared.stage_events import carried_answer, search_data, stage_label


@dataclass(frozen=True)
class Asked:
    """An answered question and the conversation it belongs to (what ``--continue`` follows up)."""

    answer: Answer
    conversation_id: str


def ask_question(
    question: str,
    strategy: Strategy | None = None,
    as_json: bool = False,
    stages: bool = False,
    conversation_id: str | None = None,
) -> Asked | None:
    """Ask (with ``conversation_id``, as a follow-up of that conversation); a spinner says which stage
    runs, then the cited answer and a one-line summary (``None`` if it failed or was cancelled).
    ``stages`` prints each stage's detailed event as it finishes; with ``as_json`` only the answer is
    printed, as JSON. Ctrl-C cancels the question on the gateway too, so no worker keeps spending
    time on it."""
    client = default_client()
    started = time.perf_counter()
    accepted = client.submit(question, QuestionOptions(strategy=strategy), conversation_id)
    progress = QuestionProgress()
    try:
        answer = follow_question(client, accepted.id, progress, quiet=as_json, stages=stages)
    except KeyboardInterrupt:
        client.cancel(accepted.id)
        console.print("[yellow]cancelled[/yellow]")
        return None
    if answer is None:
        return None
    if as_json:
        print(json.dumps(labelled(answer), indent=2, ensure_ascii=False))
        return Asked(answer, accepted.conversation_id)
    if answer.question != question.strip():
        console.print(f"[dim]searched for: {shown(answer.question)}[/dim]", highlight=False)
    render_answer(answer)
    console.print(f"[dim]{progress.summary(answer, time.perf_counter() - started)}[/dim]")
    return Asked(answer, accepted.conversation_id)


def latest_conversation() -> str:
    """The conversation ``hindsight ask --continue`` follows up: that of the latest question."""
    found = default_client().latest_conversation()
    if found is None:
        raise GatewayError(404, "there is no earlier question to continue: ask one without --continue")
    return found


@dataclass
class QuestionProgress:
    """What the stream told about the question so far: how many passages the search found."""

    passages: int | None = None

    def record(self, event: Event) -> None:
        searched = search_data(event)
        if searched is not None:
            self.passages = searched.candidates

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
    event is printed as it finishes. A failure is printed (to stderr when ``quiet``) and gives ``None``.
    What the question waits for is on the spinner in a terminal; piped or redirected, it is a line on
    stderr, once each time it changes."""
    waited_for = ""
    with console.status("understanding the question…") as spinner:
        for event in client.question_events(question_id):
            if event.stage == TERMINAL_STAGE and event.status == "done":
                return carried_answer(event)
            if event.stage == TERMINAL_STAGE:
                (error_console if quiet else console).print(f"[red]failed[/red]: {shown(event.detail)}")
                return None
            if event.stage == WAITING_STAGE:
                spinner.update(f"{shown(event.detail)} (Ctrl-C cancels)")
                if not console.is_terminal and event.detail != waited_for:  # no spinner to show it
                    error_console.print(f"{shown(event.detail)} (Ctrl-C cancels)", soft_wrap=True)
                waited_for = event.detail
                continue
            progress.record(event)
            if stages and not quiet:
                render_event(event)
            spinner.update(f"{stage_label(event.stage)}…")
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
    console.print(relevance_label(answer), highlight=False)
    if answer.citations:
        console.print(checks_label(answer), highlight=False)


def labelled(answer: Answer) -> dict[str, object]:
    """The answer as JSON with the labels a reader needs: each citation's ``check`` (what its
    ``verified`` means: the quote found in its file) and the answer's ``how_well_it_answers`` and
    ``checked`` lines, as the terminal prints them."""
    data = answer.model_dump(mode="json")
    for citation, dumped in zip(answer.citations, data["citations"], strict=True):
        dumped["check"] = quote_label(citation)
    data["how_well_it_answers"] = relevance_label(answer)
    data["checked"] = checks_label(answer)
    return data


def citation_line(c: Citation) -> str:
    """``[n] title — path:line (quote found in file; passage #1, cross-encoder 4.12)``: the place editors
    and terminals open (the page for a PDF), then a Perplexity thread's link, a quote not found in red."""
    line = shown(source_line(c))
    return line if c.verified else line.replace(quote_label(c), f"[red]{quote_label(c)}[/red]", 1)


def save_answer(folder: Path, asked: Asked, question: str) -> Path:
    """Write the answer as a Markdown note in ``folder`` (made if missing), then index the folder so
    the note is found like any other; the note's path."""
    folder = folder.expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    path = save_note(folder, question.strip(), asked.answer)
    console.print(f"saved as {shown(path)}", highlight=False, soft_wrap=True)
    run_index(default_client(), folder)
    return path
