"""``hindsight repl``: a menu over the same actions the commands call (``cli/actions/``).

Whatever is typed that is not a menu key is asked as a question (a cited answer), as a follow-up of
the questions before it until ``n`` starts a new conversation; searching lists
passages in one of the search modes the API and ``hindsight search`` offer
(:class:`shared.contracts.SearchMode`), by the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from rich.prompt import Confirm, Prompt
from rich.table import Table

from cli.actions import scrape, search, stack
from cli.actions.ask import ask_question
from cli.actions.index import run_index
from cli.client import GatewayError, default_client, transport_failure
from cli.console import console, shown
from services.scraper import ScraperError
from shared.contracts import SearchMode, SearchRequest
from shared.settings import get_settings


@dataclass(frozen=True)
class MenuItem:
    key: str
    label: str
    action: Callable[[], None]


class Repl:
    def __init__(self) -> None:
        self.mode = SearchMode.AUTO
        self.conversation_id: str | None = None
        modes = " / ".join(m.value for m in SearchMode)
        self.items = [
            MenuItem("1", "ask a question (a written answer that cites its passages)", self.ask),
            MenuItem("2", "build the index from a folder", self.build_index),
            MenuItem("3", "scrape Perplexity (resume or restart)", self.scrape),
            MenuItem("4", "start the local stack", stack.start_stack),
            MenuItem("5", "stop the local stack", stack.stop_stack),
            MenuItem("6", "status", stack.show_status),
            MenuItem("7", "reset data (delete the index)", self.reset),
            MenuItem("8", f"search passages, no answer (modes: {modes})", self.search),
            MenuItem("n", "new conversation (the next question does not follow up the last)", self.new),
            MenuItem("h", "help", self.help),
            MenuItem("q", "quit", self.quit),
        ]
        self.running = True

    def run(self) -> None:
        console.print("[bold]Hindsight[/bold] — answers from your own research, with exact citations.")
        self.show_menu()
        while self.running:
            typed = Prompt.ask(
                "\n[bold]ask a question[/bold], or choose (h for help)", console=console
            ).strip()
            if not typed:
                continue
            item = next((i for i in self.items if i.key == typed.lower()), None)
            try:
                if item is None:
                    self.ask_in_conversation(typed)
                else:
                    item.action()
            except GatewayError as exc:
                console.print(f"[red]{shown(exc)}[/red]")
            except httpx.TransportError as exc:
                console.print(f"[red]{transport_failure(exc)}[/red] (or menu entry 4)")
            except ScraperError as exc:
                console.print(f"[red]{shown(exc)}[/red]")
            except (OSError, TimeoutError, RuntimeError, ValueError) as exc:
                console.print(f"[red]{type(exc).__name__}[/red]: {shown(exc)}")

    def show_menu(self) -> None:
        table = Table(show_header=False, box=None)
        for item in self.items:
            table.add_row(f"[bold]{item.key}[/bold]", item.label)
        console.print(table)

    def ask(self) -> None:
        question = Prompt.ask("question", console=console).strip()
        if question:
            self.ask_in_conversation(question)

    def ask_in_conversation(self, question: str) -> None:
        """Ask as a follow-up of the questions before (the first one starts the conversation)."""
        asked = ask_question(question, conversation_id=self.conversation_id)
        if asked is not None:
            self.conversation_id = asked.conversation_id

    def new(self) -> None:
        self.conversation_id = None
        console.print("a new conversation: the next question stands on its own")

    def search(self) -> None:
        choices = [m.value for m in SearchMode]
        self.mode = SearchMode(Prompt.ask("mode", choices=choices, default=self.mode.value, console=console))
        query = Prompt.ask("query", console=console).strip()
        if query:
            search.search_passages(SearchRequest(query=query, mode=self.mode))

    def build_index(self) -> None:
        folder = Path(Prompt.ask("folder to index", console=console)).expanduser().resolve()
        if not folder.is_dir():
            console.print(f"[red]{shown(folder)} is not a folder[/red]")
            return
        run_index(default_client(), folder)

    def scrape(self) -> None:
        how = Prompt.ask(
            "resume where it stopped, or restart", choices=["resume", "restart"], default="resume"
        )
        # The checkpoint makes every run resumable; a restart fetches every thread again.
        scrape.scrape(get_settings(), refetch_all=how == "restart")

    def reset(self) -> None:
        store = get_settings().store_dir
        console.print(f"this deletes the index in {store}; your files and exports are kept")
        if Confirm.ask("delete the index?", default=False, console=console):
            stack.reset_index()
        else:
            console.print("nothing deleted")

    def help(self) -> None:
        console.print(
            "Type a question for a written answer whose \\[n] markers cite exact passages; the next "
            'question follows it up ("and how often is it fed?") until n starts anew; search lists '
            "matching passages without an answer (semantic: by meaning, exact: by the words, hybrid: "
            "both, auto: chosen from the query). Build the index from a folder of notes or exports "
            "first; scraping exports your Perplexity threads as Markdown into the data folder. Every "
            "entry is also a command: `hindsight --help`."
        )
        self.show_menu()

    def quit(self) -> None:
        self.running = False
