"""The one terminal every command, action and the REPL print to."""

from __future__ import annotations

from rich.console import Console

console = Console()
