"""Find where a model's quote really sits in its passage.

Small models paraphrase, re-case and re-space what they were asked to copy. A quote is located
exactly, then with whitespace and case normalised, then as the passage sentence it overlaps most;
the citation always records the passage's own characters and their exact offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.synthesizer.segmentation import segment
from services.synthesizer.text_support import support

MIN_SENTENCE_OVERLAP = 0.6
MIN_QUOTE_CHARS = 40
SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    how: str


def normalised_with_offsets(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased with whitespace runs collapsed, and the original offset of each character."""
    chars: list[str] = []
    offsets: list[int] = []
    for match in re.finditer(r"\s+|\S", text):
        chars.append(" " if match.group(0).isspace() else match.group(0).lower())
        offsets.append(match.start())
    return "".join(chars), offsets


def locate_quote(passage: str, quote: str) -> Span | None:
    """The span of ``passage`` that ``quote`` stands for, or ``None`` when nothing in it matches well.

    A quote of a few words is widened to its sentence: a citation should show a claim, not a keyword.
    """
    span = locate_span(passage, quote)
    if span is None or span.end - span.start >= MIN_QUOTE_CHARS:
        return span
    for sentence in segment(passage):
        if (
            sentence.start <= span.start
            and span.end <= sentence.end
            and (sentence.start, sentence.end) != (span.start, span.end)
        ):
            return Span(sentence.start, sentence.end, f"{span.how}+sentence")
    return span


def locate_span(passage: str, quote: str) -> Span | None:
    quote = quote.strip().strip("\"'“”")
    if not quote:
        return None
    exact = passage.find(quote)
    if exact >= 0:
        return Span(exact, exact + len(quote), "exact")
    normal_passage, offsets = normalised_with_offsets(passage)
    normal_quote = SPACE.sub(" ", quote.lower())
    found = normal_passage.find(normal_quote)
    if found >= 0:
        last = offsets[found + len(normal_quote) - 1]
        return Span(offsets[found], last + 1, "normalised")
    scored = [(support(quote, s.text), s) for s in segment(passage)]
    if not scored:
        return None
    overlap, best = max(scored, key=lambda pair: pair[0])
    if overlap < MIN_SENTENCE_OVERLAP:
        return None
    return Span(best.start, best.end, "sentence")
