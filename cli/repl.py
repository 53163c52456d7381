"""``hindsight repl``: a menu over the same functions and commands the CLI has.

Actions that this package implements call its functions directly (``ask_question``,
``indexer.run_index``...); actions that live in other CLI modules (``scrape``, ``search``) are run as the
assembled CLI's own commands, so the menu never duplicates them and picks up whatever is wired in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import typer
from rich.console import Console
from rich.prompt import Confirm, Prompt
from rich.table import Table

from cli import indexer, main
from cli.client import GatewayError

SEARCH_MODES = ("auto", "semantic", "exact", "rag")


@dataclass(frozen=True)
class MenuItem:
    key: str
    label: str
    action: Callable[[], None]


class Repl:
    def __init__(self, app: typer.Typer, console: Console) -> None:
        self.command = typer.main.get_command(app)
        self.console = console
        self.mode = "auto"
        self.items = [
            MenuItem("1", "ask or search (modes: Auto / Semantic / Exact / RAG)", self.search),
            MenuItem("2", "build the index from a folder", self.build_index),
            MenuItem("3", "scrape Perplexity (resume or restart)", self.scrape),
            MenuItem("4", "start the local stack", main.start_stack),
            MenuItem("5", "stop the local stack", main.stop_stack),
            MenuItem("6", "status", main.show_status),
            MenuItem("7", "reset data (delete the index)", self.reset),
            MenuItem("h", "help", self.help),
            MenuItem("q", "quit", self.quit),
        ]
        self.running = True

    def run(self) -> None:
        self.console.print("[bold]Hindsight[/bold] — answers from your own research, with exact citations.")
        self.show_menu()
        while self.running:
            choice = Prompt.ask("\n[bold]choose[/bold] (h for help)", console=self.console).strip().lower()
            item = next((i for i in self.items if i.key == choice), None)
            if item is None:
                self.console.print(f"no menu entry {choice!r}")
                self.show_menu()
                continue
            try:
                item.action()
            except GatewayError as exc:
                self.console.print(f"[red]gateway refused[/red]: {exc}")
            except (OSError, TimeoutError, RuntimeError) as exc:
                self.console.print(f"[red]{type(exc).__name__}[/red]: {exc}")

    def show_menu(self) -> None:
        table = Table(show_header=False, box=None)
        for item in self.items:
            table.add_row(f"[bold]{item.key}[/bold]", item.label)
        self.console.print(table)

    def invoke(self, args: list[str]) -> None:
        """Run one of the CLI's own commands, as ``hindsight <args>`` would."""
        try:
            self.command.main(args, prog_name="hindsight", standalone_mode=False)
        except click.UsageError as exc:
            self.console.print(f"[red]{args[0]}[/red]: {exc.format_message()}")
        except click.exceptions.Exit:
            pass

    def search(self) -> None:
        self.mode = Prompt.ask("mode", choices=list(SEARCH_MODES), default=self.mode, console=self.console)
        query = Prompt.ask("question" if self.mode == "rag" else "query", console=self.console).strip()
        if not query:
            return
        if self.mode == "rag":
            main.ask_question(query)
        else:
            self.invoke(["search", query, "--mode", self.mode])

    def build_index(self) -> None:
        folder = Path(Prompt.ask("folder to index", console=self.console)).expanduser().resolve()
        if not folder.is_dir():
            self.console.print(f"[red]{folder} is not a folder[/red]")
            return
        indexer.run_index(main.gateway(), folder)

    def scrape(self) -> None:
        how = Prompt.ask(
            "resume where it stopped, or restart", choices=["resume", "restart"], default="resume"
        )
        # The checkpoint makes every run resumable; a restart fetches every thread again.
        self.invoke(["scrape"] if how == "resume" else ["scrape", "--refetch-all"])

    def reset(self) -> None:
        store = main.get_settings().store_dir
        self.console.print(f"this deletes the index in {store}; your files and exports are kept")
        if Confirm.ask("delete the index?", default=False, console=self.console):
            main.reset_index()
        else:
            self.console.print("nothing deleted")

    def help(self) -> None:
        self.console.print(
            "Ask in RAG mode for a written answer whose \\[n] markers cite exact passages; the other "
            "search modes list matching passages (semantic: by meaning, exact: by the words). "
            "Build the index from a folder of notes or exports first; scraping exports your "
            "Perplexity threads as Markdown into the data folder. Every entry is also a command: "
            "`hindsight --help`."
        )
        self.show_menu()

    def quit(self) -> None:
        self.running = False
