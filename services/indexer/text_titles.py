"""The title of a reStructuredText or AsciiDoc file, which the indexer reads as plain text.

reStructuredText: the first section title, a line of text underlined (and optionally overlined)
by one punctuation character repeated at least as long as the text, without its inline markup
(``:mod:`email` Package`` is titled "email Package"). AsciiDoc: the document title,
a line ``= Title`` (one ``=``; ``==`` opens a section). Only the title is read: docutils, the
maintained reStructuredText parser, would read the whole document to find it, and its ``include``
and ``raw`` directives open other files; there is no maintained AsciiDoc parser for Python.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

# docutils' section adornment characters.
RST_ADORNMENT = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1*[ \t]*""")
RST_ROLE = re.compile(r":[\w.+-]+:(?=`)")
RST_INLINE_MARKS = re.compile(r"`+|\*+")
ADOC_TITLE = re.compile(r"^=[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
RST_SUFFIXES = frozenset({".rst"})
ADOC_SUFFIXES = frozenset({".adoc", ".asciidoc"})


def rst_title(text: str) -> str | None:
    """The first underlined line's text, or ``None`` when no line is underlined."""
    lines = text.splitlines()
    for text_line, underline in itertools.pairwise(lines):
        title = text_line.strip()
        adornment = underline.rstrip()
        if (
            title
            and not RST_ADORNMENT.fullmatch(text_line)
            and RST_ADORNMENT.fullmatch(adornment)
            and len(adornment) >= len(title)
        ):
            return " ".join(RST_INLINE_MARKS.sub("", RST_ROLE.sub("", title)).split())
    return None


def adoc_title(text: str) -> str | None:
    """The text of the first ``= Title`` line, or ``None``."""
    found = ADOC_TITLE.search(text)
    return found.group(1) if found else None


def plain_text_title(text: str, path: Path) -> str:
    """The title a reStructuredText or AsciiDoc file gives itself, else the file's name."""
    suffix = path.suffix.lower()
    title = (
        rst_title(text) if suffix in RST_SUFFIXES else adoc_title(text) if suffix in ADOC_SUFFIXES else None
    )
    return title or path.stem
