"""Manual pages as sections: rendered to plain text by man-db, one section per heading.

``man -l`` renders a page the way a reader sees it (macros expanded, no hyphenation or justification,
one line per paragraph at a wide ``MANWIDTH``); ``col -bx`` removes the overstrikes. A heading is a
line at column 0 (``NAME``, ``DESCRIPTION``) or at column 3 (a subsection); the body is every line
until the next heading, its common indentation removed.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from provisioning.manuals.sections import Section, section_body

HEADING = re.compile(r"^(?:   )?(\S.*)$")  # matched against the line without its trailing spaces
PAGE_HEADER = re.compile(r"^\S+\(\w+\)\s")  # "GREP(1)   General Commands Manual   GREP(1)"


def render_manpage(path: Path) -> str:
    """The page as plain text; an empty string when man-db cannot render it."""
    env = {**os.environ, "MANWIDTH": "10000", "MAN_KEEP_FORMATTING": "", "LC_ALL": "C.UTF-8"}
    rendered = subprocess.run(
        ["man", "--nh", "--nj", "-l", str(path)], capture_output=True, env=env, timeout=60
    )
    plain = subprocess.run(["col", "-bx"], input=rendered.stdout, capture_output=True, timeout=60)
    return plain.stdout.decode("utf-8", errors="replace")


def manpage_sections(document: str, text: str) -> list[Section]:
    """Sections of a rendered page: ``chapter`` is the column-0 heading a section sits under."""
    sections: list[Section] = []
    chapter, heading, body = "", "", list[str]()
    for line in text.splitlines():
        line = line.rstrip()
        found = HEADING.match(line) if not line.startswith("    ") else None
        if found is None or PAGE_HEADER.match(line):
            if heading:
                body.append(line)
            continue
        if heading:
            sections.append(Section(document, chapter, heading, section_body(body)))
        heading, body = found.group(1), []
        if not line.startswith(" "):
            chapter = heading
    if heading:
        sections.append(Section(document, chapter, heading, section_body(body)))
    return sections


def name_line(sections: list[Section]) -> tuple[str, str] | None:
    """``("grep", "print lines that match patterns")`` from the NAME section, or None."""
    name = next((s.body for s in sections if s.heading == "NAME"), "")
    commands, dash, summary = " ".join(name.split()).partition(" - ")
    if not dash or not summary:
        return None
    return commands.split(",")[0].strip(), summary.strip()
