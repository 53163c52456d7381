"""Neighbour expansion stitches chunks by their character spans: the passage is the document's text."""

from __future__ import annotations

from services.retriever.expansion import expand_neighbours, stitch
from services.retriever.fusion import collect
from shared.contracts import Chunk, SourceKind
from shared.interfaces import Hit

DOCUMENT = "alpha beta gamma.\n\ndelta epsilon zeta eta.   theta iota kappa"


def chunk(ordinal: int, start: int, end: int) -> Chunk:
    return Chunk(
        id=f"d:{ordinal}",
        document_id="d",
        ordinal=ordinal,
        text=DOCUMENT[start:end],
        char_start=start,
        char_end=end,
        title="t",
        source_uri="/d.md",
        kind=SourceKind.MARKDOWN,
    )


def test_overlapping_neighbours_are_stitched_without_repeating_the_overlap() -> None:
    chunks = [chunk(0, 0, 17), chunk(1, 11, 37), chunk(2, 30, 44)]
    passage, start = stitch(chunks, chunks[1])
    assert (passage, start) == (DOCUMENT[0:44], 0)


def test_whitespace_gap_keeps_offsets_and_a_distant_chunk_is_not_stitched() -> None:
    first, second = chunk(0, 0, 17), chunk(1, 19, 42)  # the gap is "\n\n"
    passage, start = stitch([first, second], second)
    assert passage == DOCUMENT[0:42] and start == 0
    far = chunk(2, 51, 61)  # 9 characters after the passage ends: not adjacent text
    passage, _ = stitch([first, second, far], second)
    assert passage == DOCUMENT[0:42]


def test_expansion_on_the_store_gives_the_exact_document_span(corpus) -> None:
    chunks = corpus.chunks["python/gil.md"]
    assert len(chunks) >= 3
    middle = chunks[1]
    [candidate] = collect({"dense:0": [_hit(middle)]}).values()
    expand_neighbours([candidate], corpus.store, k_adjacent=1)
    body = corpus.bodies["python/gil.md"]
    assert candidate.passage_start == chunks[0].char_start
    assert candidate.passage == body[chunks[0].char_start : chunks[2].char_end]
    assert candidate.text_start == chunks[0].char_start
    assert candidate.chunk.text in candidate.passage


def test_expansion_at_a_documents_edge_takes_only_the_existing_neighbour(corpus) -> None:
    chunks = corpus.chunks["python/gil.md"]
    [candidate] = collect({"dense:0": [_hit(chunks[0])]}).values()
    expand_neighbours([candidate], corpus.store, k_adjacent=1)
    body = corpus.bodies["python/gil.md"]
    assert candidate.passage == body[chunks[0].char_start : chunks[1].char_end]


def test_a_candidate_inside_a_better_ranked_passage_is_not_returned_twice(corpus) -> None:
    chunks = corpus.chunks["python/gil.md"]
    better, inside = collect({"dense:0": [_hit(chunks[1]), _hit(chunks[2])]}).values()
    kept = expand_neighbours([better, inside], corpus.store, k_adjacent=1)
    assert kept == [better]
    assert chunks[2].text in better.passage


def _hit(chunk: Chunk) -> Hit:
    return Hit(chunk=chunk, score=1.0)
