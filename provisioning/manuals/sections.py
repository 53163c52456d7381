"""A section of a source manual, and the rules shared by every reader."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A heading's own number: "7.1 ", "1.3.\xa0", "3.1: ", "A.2. " (a digit or a lettered appendix).
SECTION_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)+)[.:]?[\s\xa0]+")
LEADING_SPACE = re.compile(r"^[ \xa0]+")
RULE = re.compile(r"[-=_ ]+")  # a horizontal rule (footnotes), not text


@dataclass(frozen=True)
class Section:
    """One section of a manual: its heading (plain text) and its own body, subsections excluded.

    ``body`` holds the source's lines as they are (hard wraps kept), less the heading itself and
    the common indentation; ``chapter`` is the top-level heading the section sits under.
    """

    document: str
    chapter: str
    heading: str
    body: str

    @property
    def number(self) -> str:
        """The heading's section number ("7.1"), or "" when it has none."""
        numbered = SECTION_NUMBER.match(self.heading)
        return numbered.group().strip(" .:\xa0") if numbered else ""

    @property
    def question(self) -> str | None:
        """The heading as a question (its section number removed), or None if it asks nothing.

        A heading asks when it has a "?" ("Why ...? (Plus other pitfalls.)" asks too); a chapter's
        own heading never does (it is a topic: "How does zsh differ from...?").
        """
        text = SECTION_NUMBER.sub("", self.heading).strip()
        return text if "?" in text and self.heading != self.chapter else None


def section_body(lines: list[str]) -> str:
    """The body lines as one text: leading no-break spaces read as spaces, the common indent of the
    text (rules of dashes left out: a footnote rule at the margin must not keep the prose indented,
    which Markdown would read as code) and surrounding blank lines removed, trailing spaces dropped;
    line breaks are the source's own."""
    spaced = [LEADING_SPACE.sub(lambda m: " " * len(m.group()), line).rstrip() for line in lines]
    indents = [len(line) - len(line.lstrip()) for line in spaced if line and not RULE.fullmatch(line)]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] if not line[:cut].strip() else line for line in spaced).strip("\n")
