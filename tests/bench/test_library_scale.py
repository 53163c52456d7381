"""The scale bench's library: real documentation sections as Perplexity threads, every section asked
once before any remix; questions only where the smallest library holds their answer; and "first"
counts a citation only when its quote is a piece of the relevant section.

The bench itself (stacks indexing 10k and 100k chunks) runs in ``bench/``, not here.
"""

from __future__ import annotations

import json
from itertools import islice, takewhile
from pathlib import Path

from bench.corpora import TreePart, documentation_sections, documentation_threads
from bench.library_scale import AskedQuestion, covered_sections, questions_to_ask, quotes_relevant
from shared.contracts import Answer, Citation


def write_corpus(folder: Path, name: str, sections: int) -> Path:
    folder = folder / name
    folder.mkdir()
    rows = [
        {"_id": f"{name}#{n}", "title": f"{name}: Section {n} of {name}", "text": f"{name} text {n}.\nMore."}
        for n in range(sections)
    ]
    rows.append({"_id": f"{name}#empty", "title": f"{name}: Empty", "text": "  "})
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(row) for row in rows))
    queries = [{"_id": f"q{n}", "text": f"What does section {n} of {name} say?"} for n in range(sections)]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(row) for row in queries))
    qrels = "".join(f"q{n}\t{name}#{n}\t1\n" for n in range(sections))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return folder


def test_every_section_is_asked_once_in_order_before_threads_remix_two_real_sections(tmp_path: Path) -> None:
    corpora = [write_corpus(tmp_path, "alpha", 7), write_corpus(tmp_path, "beta", 5)]
    sections = documentation_sections(corpora)
    assert [s.doc_id for s in sections] == [f"alpha#{n}" for n in range(7)] + [f"beta#{n}" for n in range(5)]
    threads = documentation_threads(sections)
    real = [thread for thread, is_real in takewhile(lambda pair: pair[1], threads)]
    turns = [turn for thread in real for turn in thread.turns]
    assert [(t.question, t.answer) for t in turns] == [(s.question, s.text) for s in sections]
    assert turns[0].question == "Section 0 of alpha"  # the title without the corpus's prefix
    assert all(1 <= len(thread.turns) <= 4 and len({thread.space}) == 1 for thread in real)
    assert {thread.space for thread in real} == {"alpha", "beta"}
    texts = {s.text for s in sections}
    for thread, is_real in islice(documentation_threads(sections), len(real), len(real) + 20):
        assert not is_real
        for turn in thread.turns:
            first, second = turn.answer.split("\n\n")
            assert first in texts and second in texts
            assert any(s.question == turn.question and s.text == first for s in sections)


def test_only_questions_whose_relevant_section_the_smallest_library_holds_are_asked(tmp_path: Path) -> None:
    corpora = [write_corpus(tmp_path, "alpha", 9), write_corpus(tmp_path, "beta", 6)]
    sections = documentation_sections(corpora)
    real_threads = 3
    first_threads = [thread for thread, _ in islice(documentation_threads(sections), real_threads)]
    answered = {turn.answer for thread in first_threads for turn in thread.turns}
    covered = covered_sections(sections, real_threads)
    assert covered == {s.doc_id for s in sections if s.text in answered}
    smallest = TreePart(
        first=0, end=real_threads, chunks=0, files=real_threads, real_files=real_threads, real_chunks=0
    )
    asked = questions_to_ask(corpora, sections, smallest, count=100)
    assert len(asked) == len(covered)
    assert all(question.relevant[0] in answered for question in asked)


def test_a_first_citation_counts_only_when_its_quote_is_a_piece_of_the_relevant_section() -> None:
    question = AskedQuestion(
        "How do I set the prompt?", ["Set PS1 in your\nshell's startup file, then restart it."]
    )

    def answered_with(quote: str) -> Answer:
        citation = Citation(number=1, document_id="d", chunk_id="d:0", title="t", source_uri="/x.md",
                            char_start=0, char_end=len(quote), quote=quote)  # fmt: skip
        return Answer(question_id="q", question="q", markdown=f"{quote} [1]", citations=[citation])

    assert quotes_relevant(answered_with("Set PS1 in your shell's   startup file,"), question)
    assert not quotes_relevant(answered_with("Set PS2 in your shell's startup file,"), question)
    assert not quotes_relevant(Answer(question_id="q", question="q", markdown="No passage."), question)
