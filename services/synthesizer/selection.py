"""Which facts the reduce keeps, and which sentences become the answer.

With an LLM (between map and reduce): facts loosely relevant to the question (``relevance_gate``),
the best per source, made to fit the narrator's token budget (``compress``).

Without one (``select_answer_facts``): the best extracted sentence, then one per part of the question
it leaves unanswered, then close seconds from other documents; never two saying the same thing. A
question's parts are its clauses: split at "?", ";" and at "and"/"," followed by a question word or a
preposition ("What is it called and how often is it fed?", "How often is it fed, and with what
flour?"). A part is covered by a sentence holding at least half of the part's content words.
"""

from __future__ import annotations

import re

from services.synthesizer.llm_schemas import Rewrite
from services.synthesizer.prompts import summary_messages
from services.synthesizer.text_support import content_words, estimate_tokens
from shared.contracts import Fact
from shared.interfaces import LLM, LLMError

# Facts for the LLM's narrator.
MIN_RELEVANCE = 0.2
LONE_SURVIVOR_KEEP = 4
MIN_SUMMARY_WORDS = 12


def relevance_gate(facts: list[Fact], min_relevance: float = MIN_RELEVANCE) -> list[Fact]:
    """Facts at or above ``min_relevance``; all of them if none pass; the top four if only one of
    more than three passes (a single survivor is more often a gate too strict than the truth), but
    never a fact that shares not one word with the question beside one that does."""
    ranked = sorted(facts, key=lambda f: f.relevance, reverse=True)
    passing = [f for f in ranked if f.relevance >= min_relevance]
    if not passing:
        return ranked
    if len(passing) == 1 and len(ranked) > 3:
        return [f for f in ranked if f.relevance > 0][:LONE_SURVIVOR_KEEP]
    return passing


def best_per_source(facts: list[Fact], document_of: dict[str, str]) -> list[Fact]:
    """One fact per document: the most relevant, in descending relevance."""
    best: dict[str, Fact] = {}
    for fact in facts:
        key = document_of.get(fact.chunk_id, fact.chunk_id)
        if key not in best or fact.relevance > best[key].relevance:
            best[key] = fact
    return sorted(best.values(), key=lambda f: f.relevance, reverse=True)


def shorten(text: str, llm: LLM | None) -> str:
    """``text`` in about half its words: summarised by the LLM when there is one, else cut."""
    words = text.split()
    target = max(MIN_SUMMARY_WORDS, len(words) // 2)
    if llm is not None:
        try:
            summary = llm.generate_json(summary_messages(text, target), Rewrite, max_tokens=2 * target + 20)
            if len(summary.text.split()) < len(words):
                return summary.text.strip()
        except LLMError:
            pass
    return " ".join(words[:target]) + " …" if len(words) > target else text


def compress(facts: list[Fact], budget_tokens: int, llm: LLM | None, max_calls: int) -> list[Fact]:
    """Shorten the largest fact first until the facts fit the narrator's budget, at most ``max_calls`` times.

    Only the fact's wording shrinks; its quote, the evidence a citation points at, is never touched.
    """
    facts = list(facts)
    for _ in range(max_calls):
        if sum(estimate_tokens(f.text) for f in facts) <= budget_tokens:
            break
        largest = max(range(len(facts)), key=lambda i: len(facts[i].text))
        shorter = shorten(facts[largest].text, llm)
        if len(shorter) >= len(facts[largest].text):
            break
        facts[largest] = facts[largest].model_copy(update={"text": shorter})
    return facts


# Sentences for the extractive answer.
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
