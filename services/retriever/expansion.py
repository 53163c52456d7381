"""Neighbour expansion: a candidate's passage grows by its ``k`` neighbours on either side.

Chunks overlap by design, so neighbours are stitched by their character spans: each next chunk
contributes only the characters after the passage's current end. Chunks never span a section
boundary's whitespace, so neighbours can also leave a gap; a gap is filled with as many newlines,
which keeps every offset in the passage equal to its offset in the document. A gap longer than
:data:`MAX_GAP` means the neighbour is not adjacent text and stitching stops there.
"""

from __future__ import annotations

from collections import defaultdict

from shared.contracts import Candidate, Chunk
from shared.interfaces import VectorStore

MAX_GAP = 8


def stitch(chunks: list[Chunk], centre: Chunk) -> tuple[str, int]:
    """The passage covering ``centre`` and the neighbours contiguous with it, and where it starts."""
    ordered = sorted({c.ordinal: c for c in [*chunks, centre]}.values(), key=lambda c: c.ordinal)
    index = next(i for i, c in enumerate(ordered) if c.ordinal == centre.ordinal)
    first = index
    while first > 0 and joins(ordered[first - 1], ordered[first]):
        first -= 1
    last = index
    while last + 1 < len(ordered) and joins(ordered[last], ordered[last + 1]):
        last += 1
    start, end = ordered[first].char_start, ordered[first].char_end
    parts = [ordered[first].text]
    for chunk in ordered[first + 1 : last + 1]:
        if chunk.char_end <= end:
            continue
        if chunk.char_start > end:
            parts.append("\n" * (chunk.char_start - end))
            parts.append(chunk.text)
        else:
            parts.append(chunk.text[end - chunk.char_start :])
        end = chunk.char_end
    return "".join(parts), start


def joins(before: Chunk, after: Chunk) -> bool:
    """Consecutive ordinals whose spans overlap, touch, or leave at most a short whitespace gap."""
    return after.ordinal == before.ordinal + 1 and after.char_start - before.char_end <= MAX_GAP


def expand_neighbours(candidates: list[Candidate], store: VectorStore, k_adjacent: int) -> list[Candidate]:
    """The candidates, in order, each with ``passage``/``passage_start`` set to its chunk stitched with
    ``k`` neighbours; a candidate whose chunk lies inside a better-ranked candidate's passage is
    dropped, since that passage already shows its text.

    One store read per document fetches the neighbours of all that document's candidates.
    """
    if k_adjacent <= 0:
        return candidates
    wanted: dict[str, set[int]] = defaultdict(set)
    for candidate in candidates:
        ordinal = candidate.chunk.ordinal
        wanted[candidate.chunk.document_id].update(
            o for o in range(ordinal - k_adjacent, ordinal + k_adjacent + 1) if o >= 0
        )
    fetched = {doc: store.document_chunks(doc, sorted(ordinals)) for doc, ordinals in wanted.items()}
    for candidate in candidates:
        ordinal = candidate.chunk.ordinal
        neighbours = [
            c for c in fetched[candidate.chunk.document_id] if abs(c.ordinal - ordinal) <= k_adjacent
        ]
        candidate.passage, candidate.passage_start = stitch(neighbours, candidate.chunk)
    return without_covered(candidates)


def without_covered(candidates: list[Candidate]) -> list[Candidate]:
    """Drop each candidate whose chunk's span a better-ranked passage of its document already holds."""
    shown: dict[str, list[tuple[int, int]]] = defaultdict(list)
    kept: list[Candidate] = []
    for candidate in candidates:
        chunk = candidate.chunk
        spans = shown[chunk.document_id]
        if any(start <= chunk.char_start and chunk.char_end <= end for start, end in spans):
            continue
        start = chunk.char_start if candidate.passage_start is None else candidate.passage_start
        spans.append((start, start + len(candidate.passage or chunk.text)))
        kept.append(candidate)
    return kept
