"""How-to questions, and the code blocks and commands that answer them with the sentence before.

A how-to question ("How do I build jq from source?", "How can I …", "How to …", "the command to …")
is often answered by a command rather than by a sentence, and the command is a block of its own:

- a code block: fenced, or indented in Markdown (``segmentation.code_blocks``);
- a command paragraph: a paragraph that ends neither like a sentence nor with ":", and opens with a ``$``
  prompt or follows a sentence that leads into it (ending with ":" or cut before its object,
  "execute the command"): the indented command of a plain-text file, the command line of a FAQ
  rendered to text, a ``$ cmd`` line.

Blocks with only blank lines between them, the later indented as far, are one (a program whose
paragraphs a blank line parts, as plain text and reStructuredText write them). A block is quoted
with the statement directly before it (only whitespace between), the sentence that introduces it:
"To build, run:". The quote runs from that sentence's first character to the block's last, so it
is the file's own characters, and ``code`` is the block's whole lines, verbatim.
What the block does is said by the prose around it, not by its code: its ``context`` is the
introducing sentence's paragraph up to that sentence ("If you're building from git, you'll need
flex ... To build, run:"), and the sentence after the block when it goes on with the introduction's
(a lowercase start: "You can use / x[i] <- list(NULL) / to set component 'i' of the list to NULL").
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace

from services.synthesizer.segmentation import (
    CLOSING_MARKS,
    SENTENCE_END,
    Sentence,
    code_blocks,
    is_question,
    prose_blocks,
)

HOW_TO = re.compile(
    r"^\W*how\s+(?:do|does|can|could|should|would|might)\s+(?:i|you|we|one)\b"
    r"|^\W*how\s+to\b"
    r"|\bcommands?\s+(?:to|for|that)\b"
    r"|^\W*(?:what|which)\s+(?:is\s+the\s+)?command\b",
    re.IGNORECASE,
)
PROMPT = "$ "
LEAD_OUT = SENTENCE_END | {":"}


@dataclass(frozen=True)
class Block:
    """A block and the sentence that introduces it: ``code`` is ``text[code_start:end]``; the
    context is ``text[context_start:intro.end]`` and ``continuation``, if any."""

    intro: Sentence
    code_start: int
    end: int
    context_start: int
    continuation: str = ""

    def context(self, text: str) -> str:
        return f"{text[self.context_start : self.intro.end]} {self.continuation}".strip()


def is_how_to(question: str) -> bool:
    """The question asks how to do something, or for a command."""
    return HOW_TO.search(question) is not None


def leads_in(sentence: Sentence) -> bool:
    """The sentence ends with ":" or stops before its object on a lowercase word ("run the command")."""
    tail = sentence.text.rstrip(CLOSING_MARKS)
    last = tail.split()[-1] if tail.split() else ""
    return tail.endswith(":") or (tail[-1:] not in SENTENCE_END and last.isalpha() and last.islower())


def is_command(paragraph: str) -> bool:
    """A paragraph that ends neither like a sentence nor like an introduction (":"), and asks nothing."""
    stripped = paragraph.rstrip().rstrip(CLOSING_MARKS)
    return bool(stripped) and stripped[-1] not in LEAD_OUT and not is_question(paragraph)


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def candidate_blocks(text: str, markdown: bool) -> list[tuple[int, int, bool]]:
    """``(start, end, is_code)`` of the code blocks and command paragraphs of ``text``, whole lines."""
    spans = [(start, end, True) for start, end in code_blocks(text, markdown)]
    for start, end, heading in prose_blocks(text, markdown):
        if not heading and is_command(text[start:end]):
            start = line_start(text, start)
            spans.append((start, start + len(text[start:end].rstrip()), False))
    return sorted(spans)


def introduction(text: str, sentences: list[Sentence], ends: list[int], start: int) -> int | None:
    """The index of the statement that ends right before ``start`` with only whitespace between."""
    index = bisect.bisect_right(ends, start) - 1
    if index < 0 or text[sentences[index].end : start].strip() or not sentences[index].is_statement:
        return None
    return index


def paragraph_start(text: str, sentences: list[Sentence], index: int) -> int:
    """Where the statements of sentence ``index``'s paragraph before it begin."""
    while index > 0:
        previous, sentence = sentences[index - 1], sentences[index]
        between = text[previous.end : sentence.start]
        if between.strip() or "\n\n" in between or not previous.is_statement:
            break
        index -= 1
    return sentences[index].start


def continuation(text: str, sentences: list[Sentence], starts: list[int], end: int) -> str:
    """The sentence right after ``end`` when it starts in lowercase (the introduction goes on)."""
    index = bisect.bisect_left(starts, end)
    if index == len(sentences) or text[end : starts[index]].strip():
        return ""
    following = sentences[index].text
    return following if following[:1].islower() else ""


def indentation(text: str, start: int) -> int:
    """How far the line at ``start`` is indented."""
    end = text.find("\n", start)
    line = text[start : end if end >= 0 else len(text)]
    return len(line) - len(line.lstrip())


def goes_on(text: str, block: Block, start: int) -> bool:
    """The block at ``start`` continues ``block``: only blank lines between, indented as far or
    further (the same program parted by a blank line, not a heading after it)."""
    between = text[block.end : start]
    return (
        block.end <= start
        and not between.strip()
        and (indentation(text, start) >= indentation(text, block.code_start))
    )


def introduced_blocks(text: str, sentences: list[Sentence], markdown: bool = True) -> list[Block]:
    """The blocks of ``text`` that a sentence of ``sentences`` (its segmentation) introduces."""
    ends = [s.end for s in sentences]
    starts = [s.start for s in sentences]
    found: list[Block] = []
    for start, end, is_code in candidate_blocks(text, markdown):
        if found and goes_on(text, found[-1], start):
            found[-1] = replace(found[-1], end=end)
            continue
        index = introduction(text, sentences, ends, start)
        if index is None or (found and sentences[index].start < found[-1].end):
            continue  # no introduction, or a line of the block before
        intro = sentences[index]
        if is_code or text[start:end].lstrip().startswith(PROMPT) or leads_in(intro):
            after = continuation(text, sentences, starts, end)
            found.append(Block(intro, start, end, paragraph_start(text, sentences, index), after))
    return found
