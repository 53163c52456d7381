"""The narrator: the answer as sentences, each tied to the facts it rests on.

With an LLM the sentences come as schema-constrained JSON, so citations are data rather than markers
to parse out of prose; a sentence citing no fact it was given is dropped and counted. Without one,
the facts' own sentences are the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.synthesizer.llm_schemas import NarratorReply
from services.synthesizer.prompts import narrator_messages
from services.synthesizer.text_support import strip_source_markers
from shared.contracts import Fact
from shared.interfaces import LLM

TOKENS_PER_SENTENCE = 50
SENTENCES_PER_PARAGRAPH = 3
# Heading and quote marks and list bullets; a ``*`` or ``-`` only as a bullet (before a space), so an
# opening ``**bold**`` or ``*emphasis*`` keeps both its halves.
LEADING_MARKUP = re.compile(r"^(?:[#>\s]|[-*+](?=\s))+")


@dataclass(frozen=True)
class Claim:
    """One sentence of the answer and the indices (into the narrated facts) of what it cites."""

    text: str
    facts: tuple[int, ...]


def clean_sentence(text: str) -> str:
    """One tidy sentence: no source-native ``[n]``, no leading markup, single spaces, final stop."""
    text = " ".join(strip_source_markers(text).split())
    text = LEADING_MARKUP.sub("", text).strip()
    if text and text[-1] not in ".!?":
        text += "."
    return text


def narrate_with_llm(question: str, facts: list[Fact], llm: LLM) -> tuple[list[Claim], int]:
    """The LLM's sentences that cite at least one of ``facts``, and how many were dropped.

    Raises :class:`LLMError` when the reply is not usable at all.
    """
    messages = narrator_messages(question, [(f.source_title, f.text) for f in facts])
    reply = llm.generate_json(messages, NarratorReply, max_tokens=TOKENS_PER_SENTENCE * (len(facts) + 1))
    claims, dropped = [], reply.skipped
    for sentence in reply.sentences:
        cited = tuple(dict.fromkeys(n - 1 for n in sentence.citations if 1 <= n <= len(facts)))
        text = clean_sentence(sentence.text)
        if cited and len(text) > 1:
            claims.append(Claim(text, cited))
        else:
            dropped += 1
    return claims, dropped


def narrate_extractively(facts: list[Fact]) -> list[Claim]:
    """Each fact's quote, in the order the facts were selected, its wrapped lines joined.

    The quote, not the fact's wording: when an LLM's narration failed, its paraphrases are not
    trusted either, and the passage's own words need no model to be right.
    """
    return [Claim(clean_sentence(fact.quote), (i,)) for i, fact in enumerate(facts)]


def render(claims: list[Claim], numbers: dict[int, int]) -> str:
    """Markdown paragraphs of sentences, each ending with its ``[n]`` markers before the full stop."""
    rendered = []
    for claim in claims:
        markers = "".join(f"[{numbers[i]}]" for i in claim.facts)
        body, stop = (claim.text[:-1], claim.text[-1]) if claim.text[-1] in ".!?" else (claim.text, ".")
        rendered.append(f"{body} {markers}{stop}")
    paragraphs = [
        " ".join(rendered[start : start + SENTENCES_PER_PARAGRAPH])
        for start in range(0, len(rendered), SENTENCES_PER_PARAGRAPH)
    ]
    return "\n\n".join(paragraphs)
