"""A citation as people and tools read it: ``path:line`` (what editors and terminals open), or the page
of a PDF, and an exported Perplexity thread's perplexity.ai link after it; and an answer with its
sources listed under it, as plain Markdown for any chat client.

The labels say what was checked and nothing more: a citation's quote is "found in file" (its
``verified``), which says nothing of whether it answers; how well the passages answer is the
cross-encoder's score when a model scored them, else only their search rank (``Relevance``)."""

from __future__ import annotations

from shared.contracts import Answer, Citation


def citation_place(c: Citation) -> str:
    """``/notes/sourdough.md:3``; a PDF's ``/papers/x.pdf#page=4`` (what PDF viewers and browsers open
    at that page); the file alone without either."""
    if c.line:
        return f"{c.source_uri}:{c.line}"
    return c.source_uri + (f"#page={c.page}" if c.page else "")


def place_and_link(c: Citation) -> str:
    """:func:`citation_place`, then the thread's perplexity.ai address when the source is an
    exported Perplexity thread: ``/threads/rye.md:17 https://www.perplexity.ai/search/rye-abc``."""
    place = citation_place(c)
    return f"{place} {c.source_url}" if c.source_url else place


def quote_label(c: Citation) -> str:
    """What ``verified`` checked: ``quote found in file`` or ``quote not found in file``."""
    return "quote found in file" if c.verified else "quote not found in file"


def rank_label(c: Citation) -> str:
    """How the cited passage ranked: ``passage #1, cross-encoder 4.12``, ``passage #3 by search rank``
    when no model scored it, ``""`` when the answer predates ranks."""
    if c.rank is None:
        return ""
    if c.rerank_score is None:
        return f"passage #{c.rank} by search rank"
    return f"passage #{c.rank}, cross-encoder {c.rerank_score:.2f}"


def title_and_turn(c: Citation) -> str:
    """The source's title; for a passage of an exported thread, then the question of its turn:
    ``Install PostgreSQL › How do I enable remote connections?``."""
    return f"{c.title} › {c.turn_question}" if c.turn_question and c.turn_question != c.title else c.title


def source_line(c: Citation) -> str:
    """``[1] Sourdough — /notes/sourdough.md:3 (quote found in file; passage #1, cross-encoder 4.12)``,
    a thread's turn after its title (:func:`title_and_turn`) and its link after its place
    (:func:`place_and_link`)."""
    labels = "; ".join(label for label in (quote_label(c), rank_label(c)) if label)
    return f"[{c.number}] {title_and_turn(c)} — {place_and_link(c)} ({labels})"


def relevance_label(answer: Answer) -> str:
    """How well the passages answer, by what judged it (never by the quote check)."""
    judged = answer.relevance
    if judged is None:
        return "How well it answers: not recorded for this answer"
    if judged.judge == "retrieval" or judged.top_score is None:
        return "How well it answers: not scored (no cross-encoder ran; passages in search order)"
    best = f"the cross-encoder scores the best passage {judged.top_score:.2f}"
    if judged.answerable is None:
        return f"How well it answers: {best} (no calibrated cut to say whether it answers)"
    verdict = "at or above" if judged.answerable else "under"
    return f"How well it answers: {best}, {verdict} its cut for a passage that answers"


def checks_label(answer: Answer) -> str:
    """What was checked: quotes found in their files, and in an LLM's answer its sentences' check."""
    found = sum(c.verified for c in answer.citations)
    line = f"Checked: {found}/{len(answer.citations)} quotes found in their files"
    if answer.mode == "extractive":
        return f"{line}; the sentences are quotes, nothing checked that they answer"
    kept = [v for v in answer.verdicts if v.supported]
    judged = "an LLM and word overlap" if any(v.method == "llm" for v in answer.verdicts) else "word overlap"
    return f"{line}; {len(kept)}/{len(answer.verdicts)} written sentences matched their quotes ({judged})"


def answer_with_sources(answer: Answer) -> str:
    """The answer's Markdown (its ``[n]`` markers kept) and a "Sources" list, one cited passage a line."""
    if not answer.citations:
        return answer.markdown
    sources = "\n".join(f"- {source_line(c)}" for c in answer.citations)
    return f"{answer.markdown}\n\nSources:\n{sources}"
