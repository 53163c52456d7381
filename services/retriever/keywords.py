"""Hard keywords: the words of a question that must match exactly, not by meaning.

Two sources: patterns (quoted phrases, identifiers, error names, versions) and rarity — a plain
word that few chunks contain (high IDF) is as telling as an identifier. Rarity is measured against
the store the question will be searched in, so no word list has to be kept in step with the data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable

from shared.interfaces import VectorStore

QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”|`([^`]{2,80})`|'([^'\s][^']{1,78}[^'\s])'")
IDENTIFIER = re.compile(
    r"(?<![\w.])(?:"
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?"  # dotted.names, calls()
    r"|[A-Za-z_][A-Za-z0-9_]*\(\)"  # call()
    r"|_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+_*"  # snake_case, __dunder__
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # CamelCase, FooError
    r"|[a-z]+[A-Z]\w*"  # camelCase
    r"|[A-Z]{2,}[0-9]*"  # ACRONYMS
    r"|v?\d+\.\d+(?:\.\d+)*"  # versions
    r"|--?[a-z][a-z0-9-]+"  # command-line flags
    r")(?![\w])"
)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*[A-Za-z0-9+]|[A-Za-z]")
STOP_WORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can cannot could did do does doing done down during each few for
    from further get gets getting had has have having he her here hers him his how i if in
    into is it its itself just me more most my no nor not now of off on once only or other our
    out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up use used using very was we were what when
    where which while who whom why will with would you your yours way ways want make makes
    making need needs know possible something thing things
"""
STOP_WORDS = frozenset(STOP_WORD_TEXT.split())
RARE_IDF = 1.5


def pattern_keywords(question: str) -> list[str]:
    """Quoted phrases and identifier-like tokens, in the order they appear, without repeats."""
    found: list[str] = []
    for match in QUOTED.finditer(question):
        found.append(next(group for group in match.groups() if group))
    found.extend(match.group(0) for match in IDENTIFIER.finditer(question))
    return unique(word.strip() for word in found if word.strip())


def content_words(question: str) -> list[str]:
    """The question's words without stop words, lower-cased, in order, without repeats."""
    return unique(w.lower() for w in WORD.findall(question) if w.lower() not in STOP_WORDS and len(w) > 2)


def rare_words(question: str, idf: Callable[[str], float], limit: int) -> list[str]:
    """Up to ``limit`` content words whose IDF reaches :data:`RARE_IDF`, rarest first."""
    scored = [(idf(word), word) for word in content_words(question)]
    return [word for score, word in sorted(scored, key=lambda item: -item[0]) if score >= RARE_IDF][:limit]


def hard_keywords(question: str, idf: Callable[[str], float] | None, limit: int) -> list[str]:
    """Pattern keywords first, then the rarest plain words, ``limit`` in all."""
    keywords = pattern_keywords(question)
    if idf is not None:
        keywords = unique([*keywords, *rare_words(question, idf, limit)])
    return keywords[:limit]


def unique(words: Iterable[str]) -> list[str]:
    """Words without repeats (case-insensitive), keeping the first spelling and the order."""
    seen: set[str] = set()
    kept: list[str] = []
    for word in words:
        if word.lower() not in seen:
            seen.add(word.lower())
            kept.append(word)
    return kept


class StoreIdf:
    """IDF of a word among the store's chunks, counted with the store's own keyword search.

    Counting stops at ``cap`` chunks: a word found that often is common whatever its exact count,
    and the cap keeps the look-up cheap on a large store.
    """

    def __init__(self, store: VectorStore, cap: int = 200) -> None:
        self._store = store
        self._cap = cap
        self._total = max(1, store.count_chunks())

    def __call__(self, word: str) -> float:
        found = self._store.keyword_count(word, self._cap)
        if found == 0 or found >= self._cap:
            return 0.0  # a word no chunk holds cannot help find one; one at the cap is common
        return math.log(1 + (self._total - found + 0.5) / (found + 0.5))
