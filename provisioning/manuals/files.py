"""Reading a manual's installed file: gzip or not, and a split Info manual's parts in order."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

INFO_INDIRECT = re.compile(r"^(\S+): \d+$", re.MULTILINE)


def read_text(path: Path) -> str:
    """The file's text (UTF-8; undecodable bytes replaced), decompressed when it ends in ``.gz``."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return raw.decode("utf-8", errors="replace")


def manual_text(path: Path) -> str:
    """The file's text; a split Info manual's parts (its indirect table) appended in order."""
    text = read_text(path)
    if "\x1f\nIndirect:\n" in text:
        table = text.split("\x1f\nIndirect:\n", 1)[1].split("\x1f", 1)[0]
        suffix = ".gz" if path.suffix == ".gz" else ""
        text += "".join(read_text(path.parent / f"{part}{suffix}") for part in INFO_INDIRECT.findall(table))
    return text
