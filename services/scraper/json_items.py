"""The items of an export's top-level list, read so that one crafted item cannot sink the others.

Python's JSON reader gives up on a whole document when any value in it is nested deeper than the
interpreter's recursion limit (a crafted file with 200,000 nested brackets), and would accept
``NaN``, ``Infinity`` and ``1e20`` where a date belongs (the importer checks values, not this
module). When the document as a whole cannot be read for its depth, the list is read item by item
(``JSONDecoder.raw_decode``); an item too deep is stepped over, bracket by bracket outside strings,
and stands in the list as :class:`TooDeep`, so the caller reports it by its number and imports the
rest.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from services.scraper.errors import ScraperError

_DECODER = json.JSONDecoder()
HEAD_CHARS = 2000


class TooDeep(ScraperError):
    """An item nested deeper than the JSON reader goes; ``head`` is its opening text, to name it by."""

    def __init__(self, message: str, head: str) -> None:
        super().__init__(message)
        self.head = head


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    return index


def _skip_value(text: str, start: int) -> int:
    """Where the JSON value at ``start`` ends, by counting brackets outside strings."""
    depth, index, in_string = 0, start, False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return index + 1
        elif depth == 0 and char in ",]}":
            return index
        index += 1
    raise ValueError("the document ends inside a value")


def _items_from(text: str, start: int) -> list[Any]:
    """The items of the JSON array whose ``[`` is at ``start``."""
    items: list[Any] = []
    index = _skip_space(text, start + 1)
    while index < len(text) and text[index] != "]":
        try:
            item, index = _DECODER.raw_decode(text, index)
            items.append(item)
        except RecursionError:
            head = text[index : index + HEAD_CHARS]
            index = _skip_value(text, index)
            items.append(TooDeep(f"nested deeper than {sys.getrecursionlimit()} levels", head))
        index = _skip_space(text, index)
        if index < len(text) and text[index] == ",":
            index = _skip_space(text, index + 1)
    return items


def list_items(data: bytes, key: str) -> list[Any] | None:
    """The list at ``key`` of the top-level object (or the top-level list itself); ``None`` when the
    document has none. Raises ``ValueError`` when the document is not JSON at all."""
    text = data.decode("utf-8")
    try:
        document = json.loads(text)
    except RecursionError:
        pass  # read item by item below
    else:
        found = document.get(key) if isinstance(document, dict) else document
        return found if isinstance(found, list) else None
    opening = re.compile(r"\s*\[" if text.lstrip().startswith("[") else rf'"{re.escape(key)}"\s*:\s*\[')
    match = opening.search(text)
    return _items_from(text, match.end() - 1) if match else None
