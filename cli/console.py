"""The terminals every command, action and the REPL print to: results on stdout, failures of a
``--json`` command on stderr (so that stdout stays valid JSON)."""

from __future__ import annotations

from rich.console import Console

console = Console()
error_console = Console(stderr=True)


def counted(count: int, noun: str) -> str:
    """``1 source``, ``3 sources``: a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
