"""Map without an LLM: the whole sentences of each passage that best answer the question become facts.

Sentences come from the cited file's text (``segmentation``), so a passage that a chunk boundary
cuts mid-sentence still yields whole sentences; without a readable file, the passage's own text is
segmented, and a first sentence that does not open with a capital letter (the chunk boundary cut
it) or a last one that does not end like a sentence is left out. A sentence that opens with a pronoun
("It lives in the fridge") is quoted together with the sentence before it, which says what "it" is.

Only the ``FACT_PASSAGES`` best-ranked passages are read (an answer that follows the ranking starts
among them, and reading fewer files keeps the stage fast). Each sentence is scored by

    score = W_MEANING * meaning + W_WORDS * words + W_RANK / (1 + rank) [+ W_BLOCK for a block]

``meaning`` is the cosine similarity of question and sentence under the product's own embedder, for
the sentences of the ``EMBEDDED_PASSAGES`` best-ranked passages (at most ``MAX_EMBEDDED_SENTENCES``,
one batched call); other passages' sentences take their passage's dense-retrieval score. ``words`` is
the share of the question's content words the quote contains, and ``rank`` the passage's position in
the list the synthesizer received (from 0), so the retriever's ranking is kept unless a later
passage answers clearly better. A sentence counts as support only when ``meaning >= MIN_MEANING`` or
``words >= MIN_WORDS``; below both, it is not a fact at all, and a question nothing supports gets the
"nothing found" answer (``reduce``).

For a how-to question (``command_blocks``), each code block or command of the passages is a unit too,
quoted with the sentence that introduces it; its ``meaning`` is measured on the prose that leads to
it (code says little to a sentence embedder), and it earns ``W_BLOCK``: the command is the answer to
a how-to question when the prose around it is about as close as the best sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from services.synthesizer.command_blocks import Block, introduced_blocks, is_how_to
from services.synthesizer.segmentation import Sentence, segment
from services.synthesizer.source_files import read_source
from services.synthesizer.text_support import content_words
from shared.contracts import MARKUP_KINDS, Candidate, Fact, MapBatch, MapResult
from shared.distinct import per_distinct
from shared.interfaces import Embedder

# Set on pyfaq-dev (all 6,993 sections) and bench/sets/debian-faq behind the product's retrieval: the
# weights under which the first sentence's document is relevant at least as often as the first
# passage's on both (bench/answer_quality.py measures it). The better the ranking, the more weight
# rank earns: with α 0.8 / pool 100 a rank weight of 0.2 lost 2 of 123 debian-faq questions, 0.45 none.
W_MEANING = 0.7
W_WORDS = 0.1
W_RANK = 0.45
W_BLOCK = 0.35
MIN_MEANING = 0.35
MIN_WORDS = 0.5
FACT_PASSAGES = 10
EMBEDDED_PASSAGES = 6
MAX_EMBEDDED_SENTENCES = 48
FACTS_PER_PASSAGE = 3
MIN_SENTENCE_CHARS = 20
PRONOUNS = frozenset(
    {"it", "its", "this", "that", "these", "those", "they", "their", "them", "he", "she", "such"}
)


@dataclass(frozen=True)
class Passage:
    """Text to quote from, the offset of its first character in the indexed text, its sentences and
    its introduced code blocks; the first ``leading`` sentences only precede the passage (an
    antecedent, never a fact of their own)."""

    text: str
    shift: int
    sentences: list[Sentence]
    leading: int = 0
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class Unit:
    """A scorable quote: a sentence, with its antecedent when it opens with a pronoun, or a block
    with the sentence that introduces it (``code``: the block's lines, the end of ``quote``;
    ``context``: the prose that says what it does, what its meaning is measured on)."""

    candidate: Candidate
    rank: int
    start: int
    quote: str
    code: str = ""
    context: str = ""


def passage_of(candidate: Candidate, with_blocks: bool = False) -> Passage:
    """The candidate's complete sentences (and, ``with_blocks``, its introduced code blocks), taken
    from its file when the file still holds the passage."""
    start, end = candidate.text_start, candidate.text_start + len(candidate.text)
    source = read_source(candidate.chunk)
    if source is not None and source.body[start:end] == candidate.text:
        every = source.body_sentences
        near = source.body_blocks if with_blocks else []
        blocks = [b for b in near if b.end > start and b.intro.start < end]
        inside = [i for i, s in enumerate(every) if s.end > start and s.start < end]
        if not inside:
            return Passage(source.body, 0, [], blocks=blocks)
        first = max(0, inside[0] - 1)
        sentences = every[first : inside[-1] + 1]
        return Passage(source.body, 0, sentences, leading=inside[0] - first, blocks=blocks)
    markdown = candidate.chunk.kind in MARKUP_KINDS
    found = segment(candidate.text, markdown)
    if candidate.text_start > 0 and found and found[0].start == 0 and not found[0].text[0].isupper():
        found = found[1:]  # begins mid-sentence: the chunk boundary cut it
    blocks = introduced_blocks(candidate.text, found, markdown) if with_blocks else []
    return Passage(candidate.text, candidate.text_start, found, blocks=blocks)


def opens_with_pronoun(sentence: Sentence) -> bool:
    first = sentence.text.split(maxsplit=1)[0] if sentence.text.strip() else ""
    return first.lower().strip(",;:") in PRONOUNS


def refers_back(sentence: Sentence, previous: Sentence, text: str) -> bool:
    """The sentence opens with a pronoun and follows ``previous`` in the same paragraph."""
    same_paragraph = "\n\n" not in text[previous.end : sentence.start]
    return opens_with_pronoun(sentence) and previous.is_statement and same_paragraph


def units_of(candidate: Candidate, rank: int, how_to: bool = False) -> list[Unit]:
    """The passage's whole statements (not headings, questions or cut lines), each with the sentence
    it refers back to; for a how-to question, its code blocks too, each with its introduction."""
    passage = passage_of(candidate, with_blocks=how_to)
    units = [block_unit(candidate, rank, passage, block) for block in passage.blocks]
    for index, sentence in enumerate(passage.sentences):
        whole = sentence.is_statement and sentence.is_complete
        if index < passage.leading or not whole or len(" ".join(sentence.text.split())) < MIN_SENTENCE_CHARS:
            continue
        previous = passage.sentences[index - 1] if index > 0 else None
        start = sentence.start
        if previous is not None and refers_back(sentence, previous, passage.text):
            start = previous.start
        units.append(Unit(candidate, rank, passage.shift + start, passage.text[start : sentence.end]))
    return units


def block_unit(candidate: Candidate, rank: int, passage: Passage, block: Block) -> Unit:
    quote = passage.text[block.intro.start : block.end]
    code = passage.text[block.code_start : block.end]
    return Unit(candidate, rank, passage.shift + block.intro.start, quote, code, block.context(passage.text))


def dense_score(candidate: Candidate) -> float:
    """The passage's own similarity to the question, as the dense leg measured it (0 if not found)."""
    return max((s for leg, s in candidate.scores.items() if leg.startswith("dense")), default=0.0)


def meanings(question: str, units: Sequence[Unit], embedder: Embedder | None) -> list[float]:
    """Question–quote cosine for the first embeddable units, passage dense scores for the rest. A
    text given twice (the same passage in two files, a third of the sentences of a 100k-chunk
    library's first passages) is embedded once."""
    scores = [dense_score(u.candidate) for u in units]
    embedded = [i for i, u in enumerate(units) if u.rank < EMBEDDED_PASSAGES][:MAX_EMBEDDED_SENTENCES]
    if embedder is None or not embedded:
        return scores
    texts = [" ".join((units[i].context or units[i].quote).split()) for i in embedded]

    def similarities(unique: list[str]) -> np.ndarray:
        vectors = embedder.embed_documents([question, *unique])
        return np.asarray(vectors[1:] @ vectors[0], dtype=float)

    for i, similarity in zip(embedded, per_distinct(texts, similarities), strict=True):
        scores[i] = float(similarity)
    return scores


def word_share(question_words: set[str], text: str) -> float:
    return len(content_words(text) & question_words) / len(question_words) if question_words else 0.0


def extract_facts(batch: MapBatch, embedder: Embedder | None) -> MapResult:
    """At most ``FACTS_PER_PASSAGE`` supported facts per passage, best first."""
    question_words = content_words(batch.question)
    how_to = is_how_to(batch.question)
    ranked = enumerate(batch.candidates, start=batch.first_rank)
    units = [u for rank, c in ranked if rank < FACT_PASSAGES for u in units_of(c, rank, how_to)]
    by_passage: dict[str, list[Fact]] = {}
    for unit, meaning in zip(units, meanings(batch.question, units, embedder), strict=True):
        words = word_share(question_words, unit.quote)
        if meaning < MIN_MEANING and words < MIN_WORDS:
            continue
        score = W_MEANING * meaning + W_WORDS * words + W_RANK / (1 + unit.rank) + W_BLOCK * bool(unit.code)
        chunk = unit.candidate.chunk
        fact = Fact(
            text=unit.quote,
            chunk_id=chunk.id,
            quote=unit.quote,
            quote_start=unit.start,
            source_title=chunk.title,
            relevance=round(score, 4),
            code=[unit.code] if unit.code else [],
        )
        by_passage.setdefault(chunk.id, []).append(fact)
    facts = [
        fact
        for found in by_passage.values()
        for fact in sorted(found, key=lambda f: f.relevance, reverse=True)[:FACTS_PER_PASSAGE]
    ]
    return MapResult(batch_index=batch.batch_index, facts=facts)


def best_snippet(question: str, candidates: list[Candidate], embedder: Embedder | None = None) -> Fact | None:
    """The single best-scoring sentence of a batch: what a batch the LLM got nothing from falls back to."""
    batch = MapBatch(question_id="", question=question, batch_index=0, candidates=candidates)
    return max(extract_facts(batch, embedder).facts, key=lambda f: f.relevance, default=None)
