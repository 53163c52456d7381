"""The narrator: the answer as sentences, each tied to the facts it rests on.

With an LLM the sentences come as schema-constrained JSON, so citations are data rather than markers
to parse out of prose; a sentence citing no fact it was given is dropped and counted. Without one,
the facts' own sentences are the answer, and a fact quoting a code block (a how-to answer) is its
introducing sentence followed by the block, its lines as they are in the file.
"""

from __future__ import annotations

import re
import textwrap
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
    """One sentence of the answer and the indices (into the narrated facts) of what it cites; ``code``
    is the block the sentence introduces, if any (its lines, common indentation removed)."""

    text: str
    facts: tuple[int, ...]
    code: str = ""


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


def quoted_block(fact: Fact) -> tuple[str, str] | None:
    """``(introduction, block)`` when the fact's quote ends with its one ``code`` item on lines of
    their own (how the extractive map records a quoted code block), else ``None``."""
    if len(fact.code) != 1 or not fact.quote.endswith(fact.code[0]):
        return None
    introduction = fact.quote[: len(fact.quote) - len(fact.code[0])]
    if not introduction.strip() or not introduction.endswith("\n"):
        return None
    return introduction, fact.code[0]


def extractive_claim(fact: Fact, index: int) -> Claim:
    block = quoted_block(fact)
    if block is None:
        return Claim(clean_sentence(fact.quote), (index,))
    introduction = LEADING_MARKUP.sub("", " ".join(strip_source_markers(block[0]).split()))
    if introduction[-1] not in ".!?:":
        introduction += ":"  # "execute the command" leads into the block
    return Claim(introduction, (index,), textwrap.dedent(block[1]))


def narrate_extractively(facts: list[Fact]) -> list[Claim]:
    """Each fact's quote, in the order the facts were selected, its wrapped lines joined (a quoted
    block's own lines kept).

    The quote, not the fact's wording: when an LLM's narration failed, its paraphrases are not
    trusted either, and the passage's own words need no model to be right.
    """
    return [extractive_claim(fact, i) for i, fact in enumerate(facts)]


def fenced(code: str) -> str:
    """``code`` as a Markdown code block; a block quoted with its own fence lines stays as it is."""
    if code.startswith(("```", "~~~")):
        return code
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


def render(claims: list[Claim], numbers: dict[int, int]) -> str:
    """Markdown paragraphs of sentences, each ending with its ``[n]`` markers before the full stop
    (or the colon that introduces a block; the block follows as a paragraph of its own)."""
    paragraphs, current = [], []
    for claim in claims:
        markers = "".join(f"[{numbers[i]}]" for i in claim.facts)
        if claim.code:  # "run:", and reStructuredText's "for example::", introduce the block
            body, stop = claim.text.rstrip(":").rstrip(), ":"
        else:
            body, stop = (claim.text[:-1], claim.text[-1]) if claim.text[-1] in ".!?" else (claim.text, ".")
        current.append(f"{body} {markers}{stop}")
        if claim.code or len(current) == SENTENCES_PER_PARAGRAPH:
            paragraphs.append(" ".join(current))
            current = []
        if claim.code:
            paragraphs.append(fenced(claim.code))
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)
