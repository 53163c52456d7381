"""Between map and reduce: keep facts loosely relevant to the question, the best per source, and make
them fit the narrator's token budget."""

from __future__ import annotations

from services.synthesizer.llm_schemas import Rewrite
from services.synthesizer.prompts import summary_messages
from services.synthesizer.text_support import estimate_tokens
from shared.contracts import Fact
from shared.interfaces import LLM, LLMError

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
