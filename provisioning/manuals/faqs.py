"""Plain-text FAQs as sections: each question line, with the text up to the next question as its answer.

A question line stands after a blank line, ends with "?", is indented at most four columns, holds
3 to 40 words, and may carry a numbering prefix ("Q:", "2.1)", "Q3.") that is removed. A table of
contents lists the same questions without answers: a question is kept where its answer is longest.
"""

from __future__ import annotations

import re

from provisioning.manuals.sections import Section, section_body

QUESTION_PREFIX = re.compile(r"^(?:Q(?:uestion)?\s*\d*[.:)]?|\d+(?:\.\d+)*[.:)]?|[-*])\s+", re.IGNORECASE)
MIN_ANSWER_WORDS = 15


def question_of(line: str, after_blank: bool) -> str | None:
    """The question a line asks, numbering removed, or None when it is no question line."""
    indent = len(line) - len(line.lstrip())
    text = QUESTION_PREFIX.sub("", line.strip())
    if not after_blank or indent > 4 or not text.endswith("?"):
        return None
    return text if 3 <= len(text.split()) <= 40 else None


def faq_sections(document: str, text: str) -> list[Section]:
    """The answered questions of a plain-text FAQ, each once (its longest answer)."""
    found: dict[str, Section] = {}
    question, body, after_blank = "", list[str](), True
    for line in [*text.splitlines(), "", "end?"]:
        asked = question_of(line, after_blank)
        if asked is not None:
            answer = section_body(body)
            if question and len(answer.split()) >= MIN_ANSWER_WORDS:
                kept = found.get(question)
                if kept is None or len(kept.body) < len(answer):
                    found[question] = Section(document, document, question, answer)
            question, body = asked, []
        elif question:
            body.append(line)
        after_blank = not line.strip()
    return list(found.values())
