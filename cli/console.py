"""The terminals every command, action and the REPL print to: results on stdout, failures of a
``--json`` command on stderr (so that stdout stays valid JSON).

Text that files control (titles, paths, quotes, reasons, the answer itself) reaches the terminal only
through :func:`shown` (or :func:`plain` inside Markdown): a title could otherwise carry ``ESC]0;``
(the window title), ``ESC[2J`` (clear screen), an OSC-8 link to another host, or rich markup such as
``[/red]`` that breaks the line or crashes the command.
"""

from __future__ import annotations

import unicodedata

from rich.console import Console
from rich.markup import escape

console = Console()
error_console = Console(stderr=True)


def counted(count: int, noun: str) -> str:
    """``1 source``, ``3 sources``: a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def plain(text: object) -> str:
    """``text`` with every control character but newline and tab (ESC, BEL, CR, the C1 codes that
    start CSI and OSC sequences) replaced by U+FFFD, so a terminal shows it and obeys none."""
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" and c not in "\n\t" else c for c in str(text))


def shown(text: object) -> str:
    """File-controlled ``text`` to interpolate into a rich markup string: :func:`plain`, with rich
    markup escaped (``[/red]`` prints as itself)."""
    return escape(plain(text))
