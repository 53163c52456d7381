"""Map with an LLM: atomic facts with verbatim quotes from one batch of passages.

The model's reply is only a proposal: each entry must name a passage of the batch and carry a quote
that can be located in it (:mod:`quotes`); the fact then records the passage's exact characters and
offset. Entries that fail are skipped and counted, and a batch left with nothing falls back to its
best raw snippet, so a weak or flaky model degrades the answer instead of breaking it.
"""

from __future__ import annotations

from services.synthesizer.extractive import best_snippet
from services.synthesizer.llm_schemas import FactDraft, MapReply
from services.synthesizer.prompts import map_messages
from services.synthesizer.quotes import locate_quote
from services.synthesizer.selection import best_per_source
from services.synthesizer.text_support import relevance
from shared.contracts import Candidate, Fact, MapBatch, MapResult
from shared.interfaces import LLM, LLMError

TOKENS_PER_FACT = 90


def shown_text(candidate: Candidate, max_chars: int) -> str:
    """The part of the passage the model sees; quotes are located in exactly this text."""
    return candidate.text[:max_chars]


def fact_from_draft(
    draft: FactDraft, question: str, candidates: list[Candidate], max_chars: int
) -> Fact | None:
    """The draft as a fact whose quote is the passage's own characters, or ``None`` if it cannot be."""
    if not 1 <= draft.passage <= len(candidates):
        return None
    candidate = candidates[draft.passage - 1]
    text = shown_text(candidate, max_chars)
    span = locate_quote(text, draft.quote)
    if span is None:
        return None
    quote = text[span.start : span.end]
    return Fact(
        text=draft.fact.strip(),
        chunk_id=candidate.chunk.id,
        quote=quote,
        quote_start=candidate.text_start + span.start,
        source_title=candidate.chunk.title,
        relevance=relevance(question, f"{candidate.chunk.title} {draft.fact} {quote}"),
        dates=grounded(draft.dates, text),
        code=grounded(draft.code, text),
    )


def grounded(items: list[str], passage: str) -> list[str]:
    """The dates or code snippets that the passage really contains; small models invent the rest."""
    lowered = passage.lower()
    return [item for item in dict.fromkeys(i.strip() for i in items) if item and item.lower() in lowered]


def llm_extract_facts(batch: MapBatch, llm: LLM, max_chars: int, max_facts: int) -> MapResult:
    passages = [(c.chunk.title, shown_text(c, max_chars)) for c in batch.candidates]
    messages = map_messages(batch.question, passages, max_facts)
    try:
        reply = llm.generate_json(messages, MapReply, max_tokens=TOKENS_PER_FACT * max_facts)
        drafts, skipped = reply.facts[:max_facts], reply.skipped
    except LLMError:
        drafts, skipped = [], 1
    facts: list[Fact] = []
    for draft in drafts:
        fact = fact_from_draft(draft, batch.question, batch.candidates, max_chars)
        if fact is None:
            skipped += 1
        else:
            facts.append(fact)
    if facts:
        return MapResult(
            batch_index=batch.batch_index,
            facts=best_per_source(facts, {c.chunk.id: c.chunk.document_id for c in batch.candidates}),
            skipped_entries=skipped,
        )
    fallback = best_snippet(batch.question, batch.candidates)
    return MapResult(
        batch_index=batch.batch_index,
        facts=[fallback] if fallback else [],
        skipped_entries=skipped,
        fell_back=True,
    )
