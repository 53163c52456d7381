"""An answer saved as a Markdown note, in a folder the user chose: its ``[n]`` markers and its sources
are links to the cited files at their lines (relative to the note, ``#L<line>`` as editors and
Markdown viewers take it), so the note reads on its own and is indexed like any other. The markers
stay ``[n]`` in the text, links by the reference definitions at the end, so the note's own text (what
a later answer may quote from it) reads as the answer did.

The note is created, never overwritten, and never through a link: a name already taken gets the
next free ``(2)``, ``(3)``… suffix.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from shared.citations import citation_place, quote_label
from shared.contracts import Answer, Citation
from shared.file_names import safe_component

MAX_SAME_NAME = 100


def citation_link(c: Citation, folder: Path) -> str:
    """The cited file relative to the note's folder, with its line as ``#L<n>``; spaces escaped."""
    target = os.path.relpath(c.source_uri, folder) if Path(c.source_uri).is_absolute() else c.source_uri
    return target.replace(" ", "%20") + (f"#L{c.line}" if c.line else "")


def note_markdown(asked: str, answer: Answer, folder: Path) -> str:
    """Front matter (title, question, when, source), the answer, the sources, the markers' links."""
    front = {
        "title": asked,
        "question_id": answer.question_id,
        "searched_for": answer.question,
        "saved": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": "hindsight",
    }
    # JSON strings are YAML scalars: any question text stays one safe value.
    header = "\n".join(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in front.items())
    parts = [f"---\n{header}\n---", f"# {asked}"]
    parts.append(answer.markdown)
    if answer.citations:
        sources = []
        for c in answer.citations:
            quote = " ".join(c.quote.split())
            place = f"[{c.title} — {citation_place(c)}]({citation_link(c, folder)})"
            thread = f" <{c.source_url}>" if c.source_url else ""  # a Perplexity thread's own page
            sources.append(f"{c.number}. {place} ({quote_label(c)}){thread}\n   > {quote}")
        parts.append("## Sources\n\n" + "\n".join(sources))
        parts.append("\n".join(f"[{c.number}]: <{citation_link(c, folder)}>" for c in answer.citations))
    return "\n\n".join(parts) + "\n"


def save_note(folder: Path, asked: str, answer: Answer) -> Path:
    """Write the note as a new file in ``folder`` (which must exist and not be a link); its path."""
    if folder.is_symlink() or not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder")
    stem = f"{safe_component(asked)} ({answer.question_id[:8]})"
    text = note_markdown(asked, answer, folder)
    for copy in range(1, MAX_SAME_NAME + 1):
        path = folder / (f"{stem}.md" if copy == 1 else f"{stem} ({copy}).md")
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path
    raise FileExistsError(f"{folder} already holds {MAX_SAME_NAME} notes named {stem}")
