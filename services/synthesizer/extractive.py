"""Map without an LLM: the sentence of each passage that best matches the question becomes a fact."""

from __future__ import annotations

from services.synthesizer.text_support import content_words, sentences
from shared.contracts import Candidate, Fact, MapBatch, MapResult


def best_sentence_fact(question_words: set[str], candidate: Candidate) -> Fact | None:
    best: Fact | None = None
    for sentence in (s for s in sentences(candidate.text) if s.is_statement):
        words = content_words(sentence.text)
        overlap = len(words & question_words) / len(question_words) if question_words else 0.0
        if best is None or overlap > best.relevance:
            best = Fact(
                text=sentence.text,
                chunk_id=candidate.chunk.id,
                quote=sentence.text,
                quote_start=candidate.text_start + sentence.start,
                source_title=candidate.chunk.title,
                relevance=overlap,
            )
    return best


def one_per_title(facts: list[Fact]) -> list[Fact]:
    """The most relevant fact of each source title, in first-seen order."""
    by_title: dict[str, Fact] = {}
    for fact in facts:
        current = by_title.get(fact.source_title)
        if current is None or fact.relevance > current.relevance:
            by_title[fact.source_title] = fact
    return list(by_title.values())


def best_snippet(question: str, candidates: list[Candidate]) -> Fact | None:
    """The single best-matching sentence of a batch: what a batch the LLM got nothing from falls back to."""
    question_words = content_words(question)
    facts = [f for c in candidates if (f := best_sentence_fact(question_words, c)) is not None]
    return max(facts, key=lambda f: f.relevance, default=None)


def extract_facts(batch: MapBatch) -> MapResult:
    """At most one fact per source title: the best-matching sentence among that source's passages."""
    question_words = content_words(batch.question)
    facts = [f for c in batch.candidates if (f := best_sentence_fact(question_words, c)) is not None]
    return MapResult(batch_index=batch.batch_index, facts=one_per_title(facts))
