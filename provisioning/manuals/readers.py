"""Split each source format into sections: numbered plain text, GNU Info, Perl POD.

Every reader takes the document's label and its whole text and returns its sections in source
order, headings as plain text and bodies as the source's own lines (``section_body``).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from provisioning.manuals.sections import Section, section_body


@dataclass(frozen=True)
class NumberedText:
    """The layout of a plain-text manual whose headings start at column 0 with their number.

    ``start`` marks the line where the body begins (the table of contents before it is skipped);
    a heading may wrap onto following column-0 lines up to a blank line.
    """

    start: re.Pattern[str]
    chapter: re.Pattern[str]
    heading: re.Pattern[str]


# DocBook rendered to text (debian-faq, debian-reference): "Chapter\xa01.\xa0Title", "1.2.\xa0Title".
DOCBOOK_TEXT = NumberedText(
    start=re.compile(r"^(?:Chapter|Appendix)\xa0"),
    chapter=re.compile(r"^(?:Chapter|Appendix)\xa0\S+\.\xa0\S"),
    heading=re.compile(r"^(?:\d+|[A-Z])(?:\.\d+)+\.\xa0\S"),
)
# Yodl rendered to text (the zsh FAQ): "Chapter 1: Title", "1.2: Title", two trailing sections.
ZSH_FAQ_TEXT = NumberedText(
    start=re.compile(r"^--- End of Contents ---$"),
    chapter=re.compile(r"^Chapter \d+: \S"),
    heading=re.compile(r"^(?:\d+\.\d+: \S|Acknowledgments:$|Copyright Information:$)"),
)


def plain(heading: str) -> str:
    return " ".join(heading.replace("\xa0", " ").split())


def numbered_text_sections(document: str, text: str, layout: NumberedText) -> list[Section]:
    """Sections of a numbered plain-text manual; a chapter's own intro is a section too."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if layout.start.match(line)), None)
    if start is None:
        raise ValueError(f"{document}: no line matches {layout.start.pattern!r}")
    sections: list[Section] = []
    chapter, heading, body = "", "", list[str]()
    index = start + (0 if layout.chapter.match(lines[start]) else 1)
    while index < len(lines):
        line = lines[index]
        if layout.chapter.match(line) or layout.heading.match(line):
            if heading:
                sections.append(Section(document, chapter, heading, section_body(body)))
            wrapped = [line]
            while index + 1 < len(lines) and lines[index + 1][:1] not in ("", " ", "\xa0"):
                index += 1
                wrapped.append(lines[index])
            heading, body = plain(" ".join(wrapped)), []
            if layout.chapter.match(line):
                chapter = heading
        elif heading:
            body.append(line)
        index += 1
    if heading:
        sections.append(Section(document, chapter, heading, section_body(body)))
    return sections


INFO_HEADER = re.compile(r"^File: [^,]+,\s+Node: ([^,]+),")
INFO_UNDERLINE = {"*": 1, "=": 2, "-": 3, ".": 4}  # texi2any's underline per level
INFO_MARKUP = re.compile(r"\x00\x08\[[^\x00]*\x00\x08\]")  # index markers in index nodes


def info_sections(document: str, text: str) -> list[Section]:
    """Sections of a GNU Info manual: one per node, its menu (the node's last part) removed."""
    sections: list[Section] = []
    chapter = ""
    for node in text.split("\x1f"):
        lines = node.strip("\n").splitlines()
        header = INFO_HEADER.match(lines[0]) if lines else None
        if header is None:
            continue  # the preamble, the tag table, local variables
        heading, rest = header.group(1), lines[1:]
        while rest and not rest[0].strip():
            rest = rest[1:]
        underline = rest[1] if len(rest) > 1 else ""
        level = INFO_UNDERLINE.get(underline[:1])
        if level and underline == underline[0] * len(underline):
            heading, rest = rest[0], rest[2:]
            if level == 1:
                chapter = heading
        if "* Menu:" in rest:
            rest = rest[: rest.index("* Menu:")]
        body = section_body([INFO_MARKUP.sub("", line) for line in rest])
        sections.append(Section(document, chapter or heading, heading, body))
    return sections


POD_HEADING = re.compile(r"^=head([1-4])\s+(.*)$")
POD_DIRECTIVE = re.compile(r"^=(?:cut|pod|encoding)\b")


def pod_headings_as_text(headings: list[str]) -> list[str]:
    """Headings as Perl's own Pod::Text renders them (formatting codes such as C<> and E<lt>
    resolved), one call for all of them."""
    source = "".join(f"=head1 {heading}\n\n" for heading in headings)
    rendered = subprocess.run(
        ["pod2text", "-w", "100000", "-"], input=source, capture_output=True, text=True, check=True
    ).stdout
    lines = [line.strip() for line in rendered.splitlines() if line.strip()]
    if len(lines) != len(headings):
        raise ValueError(f"pod2text rendered {len(headings)} headings as {len(lines)} lines")
    return lines


def pod_sections(document: str, text: str) -> list[Section]:
    """Sections of a POD page, one per =headN; =cut, =pod and =encoding lines are dropped."""
    starts: list[tuple[int, int, str]] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        found = POD_HEADING.match(line)
        if found:
            starts.append((number, int(found.group(1)), found.group(2)))
    headings = pod_headings_as_text([heading for _, _, heading in starts]) if starts else []
    sections: list[Section] = []
    chapter = ""
    for (number, level, _), heading, following in zip(
        starts, headings, [*starts[1:], (len(lines), 0, "")], strict=True
    ):
        if level == 1:
            chapter = heading
        body = [line for line in lines[number + 1 : following[0]] if not POD_DIRECTIVE.match(line)]
        sections.append(Section(document, chapter, heading, section_body(body)))
    return sections
