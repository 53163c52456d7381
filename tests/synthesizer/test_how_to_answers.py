"""How-to answers over real documents (tests/fixtures/howto/SOURCES.md, and a bench set's section):
the command block is quoted verbatim with the sentence that introduces it, at its path:line, and a
FAQ's question lines are never quoted as answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.retrieval_quality import markdown_file
from services.synthesizer.command_blocks import is_how_to
from services.synthesizer.narrator import Claim, render
from shared.backends import create_embedder
from shared.contracts import Answer
from shared.interfaces import Embedder
from shared.settings import Settings
from tests.conftest import REPO, require_embedder
from tests.synthesizer.conftest import ask, chunks_of

FIXTURES = REPO / "tests" / "fixtures" / "howto"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return create_embedder(Settings(models_dir=require_embedder()))


def copied(tmp_path: Path, name: str, suffix: str) -> Path:
    path = tmp_path / f"{name}{suffix}"
    shutil.copyfile(FIXTURES / name, path)
    return path


def fenced_blocks(markdown: str) -> list[str]:
    """The code of each fenced block of an answer."""
    parts = markdown.split("```")
    return [part.strip("\n") for part in parts[1::2]]


def assert_cited_verbatim(answer: Answer) -> None:
    for citation in answer.citations:
        text = Path(citation.source_uri).read_text()
        assert text[citation.char_start : citation.char_end] == citation.quote and citation.verified
        assert citation.line == text.count("\n", 0, citation.char_start) + 1


@pytest.mark.parametrize("suffix", [".md", ".txt"])
def test_a_how_to_question_gets_the_command_block_with_its_introduction_at_its_line(
    tmp_path: Path, embedder: Embedder, suffix: str
) -> None:
    # jq's README: indented code in Markdown, an indented paragraph after "run:" in plain text.
    path = copied(tmp_path, "jq-README", suffix)

    answer = ask("How do I build jq from source?", chunks_of(path, "jq"), embedder)

    assert_cited_verbatim(answer)
    first = answer.citations[0]
    blocks = fenced_blocks(answer.markdown)
    assert first.quote.startswith("To build") and blocks, answer.markdown
    lines = path.read_text().splitlines()
    assert all(f"    {line}" in lines for line in blocks[0].splitlines()), blocks[0]
    assert first.quote.endswith(blocks[0].splitlines()[-1])
    assert lines[first.line - 1].startswith("To build")


def test_a_command_line_of_a_faq_rendered_as_text_is_quoted_after_the_sentence_leading_into_it(
    tmp_path: Path, embedder: Embedder
) -> None:
    # bench/sets/debian-faq: the Debian FAQ's section, written as the bench writes it.
    rows = (json.loads(line) for line in (REPO / "bench/sets/debian-faq/corpus.jsonl").open())
    section = next(row for row in rows if row["_id"] == "debian-faq#100")
    path = tmp_path / "packages.md"
    path.write_text(markdown_file(section))

    answer = ask("How do I display the files of an installed package?", chunks_of(path, "faq"), embedder)

    assert_cited_verbatim(answer)
    assert fenced_blocks(answer.markdown)[0] == "dpkg --listfiles foo", answer.markdown
    assert answer.markdown.startswith(
        "To list all the files provided by the installed package foo execute the command [1]:"
    )


def test_a_tab_indented_command_of_a_plain_text_faq_is_quoted_without_its_indentation(
    tmp_path: Path, embedder: Embedder
) -> None:
    # procps' FAQ: answers indented by a tab, their commands by two.
    path = copied(tmp_path, "procps-FAQ", ".txt")

    answer = ask("How can I make ps show long user names?", chunks_of(path, "procps", size=1500), embedder)

    assert_cited_verbatim(answer)
    assert fenced_blocks(answer.markdown)[0] in {
        "ps -o pid,user=CumbersomeUserNames -o comm",
        "ps -o pid,user:19,comm",
    }, answer.markdown
    assert answer.citations[0].quote.endswith(f"\t\t{fenced_blocks(answer.markdown)[0]}")


def test_a_question_that_is_not_a_how_to_is_answered_in_sentences(tmp_path: Path, embedder: Embedder) -> None:
    path = copied(tmp_path, "jq-README", ".md")

    answer = ask("What is jq?", chunks_of(path, "jq"), embedder)

    assert answer.citations and "```" not in answer.markdown, answer.markdown


def test_the_question_lines_of_a_q_and_a_faq_are_never_quoted_as_its_answer(
    tmp_path: Path, embedder: Embedder
) -> None:
    # base-files' FAQ: "Q. I upgraded my system ... says "trixie/sid". Should it not read ...?"
    path = copied(tmp_path, "base-files-README", ".txt")

    answer = ask(
        "I upgraded my system to testing and /etc/issue says trixie/sid: should it not say testing?",
        chunks_of(path, "base-files"),
        embedder,
    )

    assert_cited_verbatim(answer)
    assert answer.citations, answer.markdown
    questions = [p for p in path.read_text().split("\n\n") if p.startswith("Q.")]
    for citation in answer.citations:
        assert not any(citation.quote in question for question in questions), citation.quote


@pytest.mark.parametrize(
    ("question", "how_to"),
    [
        ("How do I build jq from source?", True),
        ("How can I keep my Debian system current?", True),
        ("how to list all history entries", True),
        ("What is the command to put a package on hold?", True),
        ("How does apt choose a mirror?", False),
        ("What is jq?", False),
    ],
)
def test_how_to_questions_are_told_from_others(question: str, how_to: bool) -> None:
    assert is_how_to(question) is how_to


def test_a_block_is_introduced_by_one_colon_after_the_citation_whatever_the_source_wrote() -> None:
    # reStructuredText (Python's FAQ) introduces a literal block with "::", a command with ":".
    claims = [Claim("For example::", (0,), "import struct"), Claim("It runs.", (1,))]

    rendered = render(claims, {0: 1, 1: 2})

    assert rendered == "For example [1]:\n\n```\nimport struct\n```\n\nIt runs [2]."
