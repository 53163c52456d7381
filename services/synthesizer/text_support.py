"""Lexical tools of the extractive mode: sentences with their spans, and word-overlap support."""

from __future__ import annotations

import re
from dataclasses import dataclass

SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)", re.MULTILINE)
WORD = re.compile(r"[A-Za-z0-9_]+")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "my",
        "me",
        "we",
        "our",
        "not",
        "no",
        "yes",
        "if",
        "so",
    ]
)
MIN_SENTENCE_CHARS = 20
SOURCE_MARKER = re.compile(r"\s*\[\d+\]")
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Sentence:
    text: str
    start: int
    heading: bool = False

    @property
    def is_statement(self) -> bool:
        """A claim a fact can rest on: not a heading, not a question."""
        return not self.heading and not self.text.endswith("?")


def sentences(text: str) -> list[Sentence]:
    """Sentences of ``text`` with their offsets, stripped of surrounding whitespace and markup."""
    found = []
    for match in SENTENCE.finditer(text):
        raw = match.group(0)
        stripped = raw.strip().lstrip("#>*- ").strip()
        if len(stripped) >= MIN_SENTENCE_CHARS:
            heading = raw.lstrip().startswith("#")
            found.append(Sentence(stripped, match.start() + raw.index(stripped), heading))
    return found


def content_words(text: str) -> set[str]:
    return {w for w in (m.group(0).lower() for m in WORD.finditer(text)) if w not in STOP_WORDS}


def support(claim: str, evidence: str) -> float:
    """Share of the claim's content words that the evidence contains (1.0 = all of them)."""
    words = content_words(claim)
    return len(words & content_words(evidence)) / len(words) if words else 0.0


def relevance(question: str, text: str) -> float:
    """Share of the question's content words that ``text`` mentions: a cheap, model-free relevance."""
    return support(question, text)


def strip_source_markers(text: str) -> str:
    """Drop the ``[n]`` references a source carries (Perplexity answers cite their own web sources),
    so they are never mistaken for the answer's citation markers."""
    return SOURCE_MARKER.sub("", text).strip()


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1
