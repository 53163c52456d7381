"""Lexical tools of the synthesizer: content words and word-overlap support."""

from __future__ import annotations

import re

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
SOURCE_MARKER = re.compile(r"\s*\[\d+\]")
CHARS_PER_TOKEN = 4


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
