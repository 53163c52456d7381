"""The labels people and tools read say what was checked: a quote found in its file, apart from how
well the passages answer (the cross-encoder's score, else the search rank); never "verified" or
"supported" for what nothing checked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.citations import answer_with_sources, checks_label, relevance_label, source_line
from shared.contracts import Answer, Citation, Relevance, Verdict

# The wrong answer the issue reports: a true quote about innodb_log_file_size for a question about
# innodb_buffer_pool_size, found in its file and scored by the cross-encoder under its cut.
QUOTE = "innodb_log_file_size is the size in bytes of each log file in a log group."


def wrong_answer(relevance: Relevance | None) -> Answer:
    citation = Citation(
        number=1, document_id="d", chunk_id="c", title="MySQL manual", source_uri="/docs/mysql.txt",
        char_start=0, char_end=len(QUOTE), line=12, quote=QUOTE, verified=True, rank=1, rerank_score=-3.21,
    )  # fmt: skip
    verdict = Verdict(sentence=QUOTE, citations=[1], supported=True, score=1.0, method="lexical")
    return Answer(
        question_id="q",
        question="What does innodb_buffer_pool_size set?",
        markdown=f"{QUOTE} [1]",
        citations=[citation],
        verdicts=[verdict],
        relevance=relevance,
    )


def test_a_found_quote_that_does_not_answer_is_labelled_found_and_not_answering() -> None:
    answer = wrong_answer(Relevance(judge="cross-encoder", model="m", top_score=-3.21, answerable=False))
    line = source_line(answer.citations[0])
    assert (
        line == "[1] MySQL manual — /docs/mysql.txt:12 (quote found in file; passage #1, cross-encoder -3.21)"
    )
    assert relevance_label(answer) == (
        "How well it answers: the cross-encoder scores the best passage -3.21, "
        "under its cut for a passage that answers"
    )
    checked = checks_label(answer)
    assert (
        checked
        == "Checked: 1/1 quotes found in their files; the sentences are quotes, nothing checked that they "
        "answer"
    )
    for text in (line, relevance_label(answer), checked):
        assert "verified" not in text and "supported" not in text


def test_without_a_cross_encoder_the_answer_says_nothing_scored_how_well_it_answers() -> None:
    answer = wrong_answer(Relevance(judge="retrieval"))
    unscored = answer.citations[0].model_copy(update={"rerank_score": None, "verified": False})
    assert source_line(unscored).endswith("(quote not found in file; passage #1 by search rank)")
    assert (
        relevance_label(answer)
        == "How well it answers: not scored (no cross-encoder ran; passages in search order)"
    )
    assert relevance_label(wrong_answer(None)) == "How well it answers: not recorded for this answer"


def test_an_llm_answer_says_how_many_written_sentences_matched_their_quotes_and_by_what() -> None:
    answer = wrong_answer(None).model_copy(update={"mode": "llm"})
    removed = Verdict(sentence="It sets the pool.", citations=[], supported=False, score=0.1, method="llm")
    answer.verdicts.append(removed)
    assert checks_label(answer).endswith(
        "; 1/2 written sentences matched their quotes (an LLM and word overlap)"
    )


def test_a_threads_citation_shows_its_place_then_its_perplexity_link_in_every_text_form() -> None:
    address = "https://www.perplexity.ai/search/innodb-abc"
    answer = wrong_answer(None)
    answer.citations[0] = answer.citations[0].model_copy(update={"source_url": address})
    line = source_line(answer.citations[0])
    assert line.startswith(f"[1] MySQL manual — /docs/mysql.txt:12 {address} (quote found in file")
    assert f"- {line}" in answer_with_sources(answer)


def test_a_citation_refuses_an_address_on_another_site() -> None:
    citation = wrong_answer(None).citations[0]
    with pytest.raises(ValidationError, match=r"perplexity\.ai"):
        Citation.model_validate({**citation.model_dump(), "source_url": "https://evil.example/search/x"})
