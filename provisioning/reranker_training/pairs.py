"""Training pairs from manual sections: a question-like line and the start of the section it heads.

* An FAQ's question, a manual's heading (its number removed) and a manual page's one-line summary
  are the queries; a manual page's subsection headings and a few of its standard sections are asked
  with the command's name ("tar exit status"), which alone tells one page's from another's.
* The positive passage is the section's first window (``WINDOW_WORDS`` words, whole lines, as the
  indexer's chunks are about that long); every window of every section is in the passage pool
  the negatives are mined from.
* Headings that name no topic ("Overview", "Options") are skipped, and so is a query asked of more
  than ``MAX_SECTIONS_PER_QUERY`` sections (it names no one section).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pydantic import BaseModel

from provisioning.manuals.manpages import name_line
from provisioning.manuals.sections import SECTION_NUMBER, Section

WINDOW_WORDS = 180
MIN_BODY_WORDS = 25
MAX_SECTIONS_PER_QUERY = 2
UNINFORMATIVE = {
    "acknowledgements", "acknowledgments", "author", "authors", "availability", "bugs", "colophon",
    "concept index", "conforming to", "copying", "copyright", "description", "general index", "history",
    "index", "introduction", "license", "name", "notes", "options", "overview", "preface",
    "reporting bugs", "see also", "standards", "synopsis", "top",
}  # fmt: skip
# Standard manual-page sections worth asking about, with how a user would ask (after the command).
MANPAGE_TOPICS = {
    "EXAMPLES": "examples",
    "EXAMPLE": "examples",
    "EXIT STATUS": "exit status",
    "ENVIRONMENT": "environment variables",
    "FILES": "files it reads",
    "CONFIGURATION": "configuration",
    "SECURITY": "security",
}


class Passage(BaseModel):
    id: int
    section: str
    text: str


class TrainingQuery(BaseModel):
    query: str
    positive: int  # a Passage id
    section: str
    kind: str  # "faq", "heading", "man-summary", "man-heading"


def windows(body: str, words: int = WINDOW_WORDS) -> list[str]:
    """The body cut at line ends into windows of about ``words`` words (a long line is one window)."""
    out: list[str] = []
    current: list[str] = []
    count = 0
    for line in body.splitlines():
        current.append(line)
        count += len(line.split())
        if count >= words:
            out.append("\n".join(current).strip("\n"))
            current, count = [], 0
    if any(line.strip() for line in current):
        out.append("\n".join(current).strip("\n"))
    return [window for window in out if window.strip()]


def heading_query(heading: str) -> str | None:
    text = " ".join(SECTION_NUMBER.sub("", heading).replace("\xa0", " ").split()).strip(" .:")
    if text.lower() in UNINFORMATIVE or len(text.split()) < 2 or len(text) > 200:
        return None
    return text


def section_queries(document: str, sections: list[Section]) -> list[tuple[Section, str, str]]:
    """(section, query, kind) for every section of a document that a query can name."""
    asked: list[tuple[Section, str, str]] = []
    if document.startswith("man:"):
        named = name_line(sections)
        if named is None:
            return asked
        command, summary = named
        description = next((s for s in sections if s.heading == "DESCRIPTION"), None)
        if description is not None:
            asked.append((description, summary, "man-summary"))
        for section in sections:
            if section.heading in MANPAGE_TOPICS:
                asked.append((section, f"{command} {MANPAGE_TOPICS[section.heading]}", "man-heading"))
            elif section.heading != section.chapter and (query := heading_query(section.heading)):
                asked.append((section, f"{command}: {query}", "man-heading"))
        return asked
    kind = "faq" if document.startswith("faq:") else "heading"
    return [(s, query, kind) for s in sections if (query := heading_query(s.heading))]


def build_pairs(documents: dict[str, list[Section]]) -> tuple[list[Passage], list[TrainingQuery]]:
    passages: list[Passage] = []
    first_window: dict[str, int] = {}
    for document, sections in documents.items():
        for number, section in enumerate(sections):
            if len(section.body.split()) < MIN_BODY_WORDS:
                continue
            key = f"{document}#{number}"
            for window in windows(section.body):
                first_window.setdefault(key, len(passages))
                passages.append(Passage(id=len(passages), section=key, text=window))
    queries: list[TrainingQuery] = []
    for document, sections in documents.items():
        index = {id(section): number for number, section in enumerate(sections)}
        for section, query, kind in section_queries(document, sections):
            key = f"{document}#{index[id(section)]}"
            if key in first_window:
                queries.append(TrainingQuery(query=query, positive=first_window[key], section=key, kind=kind))
    asked = Counter(q.query.lower() for q in queries)
    queries = [q for q in queries if asked[q.query.lower()] <= MAX_SECTIONS_PER_QUERY]
    return passages, queries


def write_pairs(folder: Path, passages: list[Passage], queries: list[TrainingQuery], record: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "passages.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in passages))
    (folder / "queries.jsonl").write_text("".join(q.model_dump_json() + "\n" for q in queries))
    (folder / "record.json").write_text(json.dumps(record, indent=1))
