"""The extractive answer over real files: whole sentences scored with the product's embedder, every
part of a question answered once, documents told apart by id, "nothing found" said plainly, and
citations that count in the file's own characters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.scraper.imports import threads_from_markdown_dir, write_threads
from services.synthesizer.citations import cite
from services.synthesizer.extractive import extract_facts, meanings, units_of
from services.synthesizer.llm_map import llm_extract_facts
from services.synthesizer.reduce import NO_ANSWER, synthesize_answer
from services.synthesizer.stages import split_into_batches
from shared.backends import create_embedder
from shared.contracts import (
    Candidate,
    Chunk,
    Fact,
)
from shared.interfaces import Embedder
from shared.settings import Settings
from testing.perplexity_library import official_files
from testing.sample_candidates import reranked_question
from tests.conftest import REPO, require_embedder
from tests.synthesizer.conftest import LIMITS, ask, chunks_of
from tests.synthesizer.scripted_llm import ScriptedLLM

FRONT_MATTER = "---\ntitle: Untitled\nuuid: 1234\n---\n"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return create_embedder(Settings(models_dir=require_embedder()))


@pytest.fixture
def samples(tmp_path: Path) -> list[Chunk]:
    notes = sorted((REPO / "samples").rglob("*.*"))
    copies = []
    for source in notes:
        copy = tmp_path / source.name
        copy.write_text(source.read_text())
        copies.append(copy)
    return [chunk for path in copies for chunk in chunks_of(path, path.stem)]


def test_a_two_part_question_is_answered_in_whole_sentences_each_part_once(
    samples: list[Chunk], embedder: Embedder
) -> None:
    answer = ask("What is my sourdough starter called and how often is it fed?", samples, embedder)

    assert "My starter is called Clint." in answer.markdown
    assert "gets fed every Sunday with equal weights of rye flour and water [1]." in answer.markdown
    assert answer.markdown.count("Clint") == 1
    assert all(c.verified and c.line is not None for c in answer.citations)


def test_a_sentence_opening_with_a_pronoun_carries_the_sentence_it_refers_to(
    samples: list[Chunk], embedder: Embedder
) -> None:
    answer = ask("How often is the starter fed, and with what flour?", samples, embedder)

    assert "It lives in the fridge and gets fed every Sunday" in answer.markdown
    first = answer.citations[0]
    assert first.quote.startswith("My starter is called Clint. It lives in the fridge")


def test_documents_sharing_a_title_are_kept_apart(tmp_path: Path, embedder: Embedder) -> None:
    first, second = tmp_path / "one.md", tmp_path / "two.md"
    first.write_text(FRONT_MATTER + "The boiler was serviced on 12 March by Kessler Heating.\n")
    second.write_text(FRONT_MATTER + "The roof gutters were cleared of leaves in late October.\n")
    chunks = chunks_of(first, "Untitled") + chunks_of(second, "Untitled")

    answer = ask("When was the boiler serviced, and when were the gutters cleared?", chunks, embedder)

    assert "12 March" in answer.markdown and "late October" in answer.markdown
    assert len({c.document_id for c in answer.citations}) == 2
    assert {c.title for c in answer.citations} == {"Untitled"}


def test_a_question_nothing_supports_is_answered_with_the_closest_sources(
    samples: list[Chunk], embedder: Embedder
) -> None:
    answer = ask("What is the boiling point of mercury at sea level?", samples, embedder)

    assert answer.markdown.startswith(NO_ANSWER)
    assert "sourdough" in answer.markdown or "trip-planning" in answer.markdown
    assert answer.citations == []


def test_a_sentence_cut_by_a_chunk_boundary_is_quoted_whole_from_the_file(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "faq.txt"
    path.write_text(
        "Debian GNU/Linux is the result of a volunteer effort to create a\n"
        "free, high-quality Unix-compatible operating system, complete\n"
        "with a suite of applications.\n"
    )
    chunks = chunks_of(path, "faq", size=70)  # the second chunk starts mid-sentence

    answer = ask("What is Debian GNU/Linux the result of?", chunks[1:], embedder)

    assert answer.citations, answer.markdown
    assert answer.citations[0].quote == path.read_text().rstrip("\n")
    assert "complete with a suite of applications. [1]." not in answer.markdown
    assert answer.markdown.endswith("complete with a suite of applications [1].")


def test_citation_offsets_count_from_the_first_character_of_the_file_front_matter_included(
    tmp_path: Path,
) -> None:
    path = tmp_path / "thread.md"
    path.write_text(FRONT_MATTER + "# Starter\n\nMy starter is called Clint.\n")
    chunk = chunks_of(path, "Untitled")[0]
    quote = "My starter is called Clint."
    fact = Fact(
        text=quote,
        chunk_id=chunk.id,
        quote=quote,
        quote_start=chunk.text.index(quote),
        source_title="Untitled",
    )

    citation = cite(1, fact, Candidate(chunk=chunk))

    text = path.read_text()
    assert citation.char_start == text.index(quote) > fact.quote_start
    assert text[citation.char_start : citation.char_end] == quote
    assert (citation.line, citation.column) == (7, 1)
    assert citation.verified

    path.write_text(text.replace("Clint", "Flint"))
    assert not cite(1, fact, Candidate(chunk=chunk)).verified  # checked against the file as it is now


def test_the_llm_path_cites_only_passages_it_received_with_quotes_in_file_coordinates(tmp_path: Path) -> None:
    received = tmp_path / "received.md"
    received.write_text(FRONT_MATTER + "# Starter\n\nMy starter is called Clint. It lives in the fridge.\n")
    state = reranked_question("What is my starter called?", chunks_of(received, "Untitled"))
    llm = ScriptedLLM()

    results = [llm_extract_facts(batch, llm, 1200, 6) for batch in split_into_batches(state, 10)]
    answer, _ = synthesize_answer(state, results, llm, LIMITS)

    assert answer.mode == "llm" and answer.citations, answer.markdown
    text = received.read_text()
    for citation in answer.citations:
        assert citation.source_uri == str(received)
        assert text[citation.char_start : citation.char_end] == citation.quote and citation.verified
        assert citation.line == text.count("\n", 0, citation.char_start) + 1


def test_an_indented_paragraph_of_a_plain_text_file_is_quoted_with_its_line(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "archives.txt"
    path.write_text(
        "Private archives\n\n"
        "    If you have built some private Debian packages, you can set up\n"
        "    your own apt-able package archive to install them.\n"
    )

    answer = ask("How can I install my private Debian packages?", chunks_of(path, "archives"), embedder)

    assert answer.citations, answer.markdown
    assert answer.citations[0].quote.startswith("If you have built some private Debian packages")
    assert answer.citations[0].line == 3


def test_a_question_the_cross_encoder_finds_unanswered_names_the_closest_sources_and_quotes_nothing(
    samples: list[Chunk], embedder: Embedder
) -> None:
    state = reranked_question("What is my sourdough starter called?", samples)
    state = state.model_copy(
        update={"rerank": state.rerank.model_copy(update={"answerable": False, "top_score": -3.2})}
    )
    results = [extract_facts(batch, embedder) for batch in split_into_batches(state, 10)]
    assert any(result.facts for result in results), "the map step found sentences to quote"

    answer, _ = synthesize_answer(state, results, None, LIMITS)

    assert answer.markdown.startswith(NO_ANSWER) and "sourdough" in answer.markdown
    assert answer.citations == []


def test_an_imported_2026_perplexity_thread_is_quoted_whole(tmp_path: Path, embedder: Embedder) -> None:
    official_files(tmp_path / "downloads")
    imported = threads_from_markdown_dir(tmp_path / "downloads", 1_000_000)
    write_threads(imported, tmp_path / "exports")
    (path,) = (tmp_path / "exports").rglob("Heat pump quotes*.md")

    answer = ask("Which heat pump fits a 120 m² house?", chunks_of(path, "Heat pump quotes"), embedder)

    assert answer.markdown.startswith("The 9 kW unit fits most 120 m² houses [1]."), answer.markdown
    assert answer.citations and all(c.verified for c in answer.citations)


class CountingEmbedder:
    """The product's embedder, keeping the texts each ``embed_documents`` call is given."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.embedder.embed_documents(texts)


def test_a_passage_held_by_two_files_has_its_sentences_embedded_once_and_both_copies_score_alike(
    tmp_path: Path, embedder: Embedder
) -> None:
    text = "The starter is fed every twelve hours with rye flour.\nIt lives in the fridge as Clint.\n"
    chunks = []
    for name in ("kitchen", "copy"):
        (tmp_path / f"{name}.md").write_text(text)
        chunks += chunks_of(tmp_path / f"{name}.md", name)
    question = "How often is the starter fed?"
    candidates = reranked_question(question, chunks).candidates
    units = [unit for rank, candidate in enumerate(candidates) for unit in units_of(candidate, rank)]
    counting = CountingEmbedder(embedder)

    scores = meanings(question, units, counting)  # type: ignore[arg-type]

    assert [u.quote for u in units[:2]] == [u.quote for u in units[2:]], "two sentences in each copy"
    embedded_once = [question, *(" ".join(u.quote.split()) for u in units[:2])]
    assert counting.texts == embedded_once
    assert scores[:2] == scores[2:]
