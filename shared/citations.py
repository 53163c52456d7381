"""A citation as people and tools read it: ``path:line`` (what editors and terminals open), or the page
of a PDF; and an answer with its sources listed under it, as plain Markdown for any chat client."""

from __future__ import annotations

from shared.contracts import Answer, Citation


def citation_place(c: Citation) -> str:
    """``/notes/sourdough.md:3``; a PDF's ``/papers/x.pdf, p. 4``; the file alone without either."""
    if c.line:
        return f"{c.source_uri}:{c.line}"
    return c.source_uri + (f", p. {c.page}" if c.page else "")


def source_line(c: Citation) -> str:
    """``[1] Sourdough notes — /notes/sourdough.md:3 (verified)``."""
    return f"[{c.number}] {c.title} — {citation_place(c)} ({'verified' if c.verified else 'unverified'})"


def answer_with_sources(answer: Answer) -> str:
    """The answer's Markdown (its ``[n]`` markers kept) and a "Sources" list, one cited passage a line."""
    if not answer.citations:
        return answer.markdown
    sources = "\n".join(f"- {source_line(c)}" for c in answer.citations)
    return f"{answer.markdown}\n\nSources:\n{sources}"
