"""Which sections answer a question section."""

from __future__ import annotations

from provisioning.manuals.sections import Section


def relevant_sections(sections: list[Section], position: int) -> list[int] | str:
    """Positions of the sections that answer the question at ``position``, or why none does.

    The answer is the question's own body; a question with no body of its own ("2.5 How can R be
    installed?") is answered by its numbered subsections ("2.5.1", "2.5.2", ...) that have one.
    """
    asked = sections[position]
    if asked.body:
        return [position]
    prefix = f"{asked.number}." if asked.number else None
    children = []
    for later in range(position + 1, len(sections)):
        if prefix is None or not sections[later].number.startswith(prefix):
            break
        if sections[later].body:
            children.append(later)
    return children or "no answer text, and no numbered subsection with one"
