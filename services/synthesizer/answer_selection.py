"""Which extracted sentences become the answer: the best one, then one per part of the question it
leaves unanswered, then close seconds from other documents; never two saying the same thing.

A question's parts are its clauses: split at "?", ";" and at "and"/"," followed by a question word
or a preposition ("What is it called and how often is it fed?", "How often is it fed, and with what
flour?"). A part is covered by a sentence holding at least half of the part's content words.
"""

from __future__ import annotations

import re

from services.synthesizer.text_support import content_words
from shared.contracts import Fact

PART_BREAK = re.compile(
    r"[?;]|,?\s+and\s+(?=(?:how|what|when|where|which|who|whom|whose|why|with|is|are|does|do|can|in|on|for)\b)"
    r"|,\s+(?=(?:how|what|when|where|which|who|why)\b)",
    re.IGNORECASE,
)
PART_COVERED = 0.5
PART_MIN_SHARE = 0.5
SECOND_SOURCE_SHARE = 0.9
DUPLICATE_JACCARD = 0.6
MAX_SENTENCES = 4


def question_parts(question: str) -> list[set[str]]:
    """The content words of each clause of the question (clauses without any are dropped)."""
    return [words for part in PART_BREAK.split(question) if part and (words := content_words(part))]


def covers(fact: Fact, part: set[str]) -> bool:
    return len(content_words(fact.quote) & part) >= PART_COVERED * len(part)


def near_duplicate(fact: Fact, chosen: list[Fact], document_of: dict[str, str]) -> bool:
    """Same document and overlapping characters, or mostly the same words as a chosen sentence."""
    words = content_words(fact.quote)
    for other in chosen:
        same_document = document_of.get(fact.chunk_id) == document_of.get(other.chunk_id)
        overlap = fact.quote_start < other.quote_start + len(other.quote) and other.quote_start < (
            fact.quote_start + len(fact.quote)
        )
        if same_document and overlap:
            return True
        other_words = content_words(other.quote)
        union = words | other_words
        if union and len(words & other_words) / len(union) >= DUPLICATE_JACCARD:
            return True
    return False


def select_answer_facts(question: str, facts: list[Fact], document_of: dict[str, str]) -> list[Fact]:
    """The answer's facts in the order they are told: the best first."""
    ranked = sorted(facts, key=lambda f: f.relevance, reverse=True)
    if not ranked:
        return []
    best = ranked[0]
    chosen = [best]
    for part in question_parts(question):
        if any(covers(f, part) for f in chosen):
            continue
        for fact in ranked:
            if fact.relevance < PART_MIN_SHARE * best.relevance:
                break
            if covers(fact, part) and not near_duplicate(fact, chosen, document_of):
                chosen.append(fact)
                break
    used = {document_of.get(f.chunk_id) for f in chosen}
    for fact in ranked:
        if fact.relevance < SECOND_SOURCE_SHARE * best.relevance or len(chosen) >= MAX_SENTENCES:
            break
        document = document_of.get(fact.chunk_id)
        if document not in used and not near_duplicate(fact, chosen, document_of):
            chosen.append(fact)
            used.add(document)
    return chosen[:MAX_SENTENCES]
