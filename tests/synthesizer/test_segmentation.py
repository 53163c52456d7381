"""Sentence segmentation of real source shapes: hard-wrapped prose, abbreviations, lists, code; and
a cited file parsed once for its sentences and its commands."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from services.synthesizer.segmentation import block_spans, segment
from services.synthesizer.source_files import SourceFile
from shared.contracts import SourceKind

WRAPPED = (
    "Debian GNU/Linux is the result of a volunteer effort to create a\n"
    "free, high-quality Unix-compatible operating system, complete\n"
    "with a suite of applications. The idea of a free Unix-like system\n"
    "originates from the GNU project, e.g. from Dr. Stallman's work in 1983.\n"
)


def test_hard_wrapped_sentences_come_whole_with_their_exact_spans() -> None:
    sentences = segment(WRAPPED)

    assert [" ".join(s.text.split()) for s in sentences] == [
        "Debian GNU/Linux is the result of a volunteer effort to create a free, high-quality "
        "Unix-compatible operating system, complete with a suite of applications.",
        "The idea of a free Unix-like system originates from the GNU project, e.g. from Dr. "
        "Stallman's work in 1983.",
    ]
    assert all(WRAPPED[s.start : s.end] == s.text for s in sentences)
    assert all(s.is_complete for s in sentences)


def test_headings_list_items_and_code_blocks_are_kept_apart_from_prose() -> None:
    text = (
        "# Installing\n"
        "Run the installer\n"
        "as root. It asks two questions.\n"
        "\n"
        "1. Choose a mirror.\n"
        "2. Pick version 1.2.3 of the tools.\n"
        "\n"
        "```\n"
        "apt-get install foo. Then reboot.\n"
        "```\n"
        "\n"
        "    indented code. also code.\n"
    )
    sentences = segment(text)

    assert [(s.text, s.heading) for s in sentences] == [
        ("Installing", True),
        ("Run the installer\nas root.", False),
        ("It asks two questions.", False),
        ("Choose a mirror.", False),
        ("Pick version 1.2.3 of the tools.", False),
    ]
    assert all(text[s.start : s.end] == s.text for s in sentences)


def test_a_line_cut_before_its_sentence_ends_is_not_a_complete_sentence() -> None:
    cut = segment("Like most Linux distributions, Debian GNU/Linux provides:\n\nthe kernel and a\n")

    assert [s.is_complete for s in cut] == [False, False]


def test_an_indented_paragraph_is_prose_in_plain_text_and_code_in_markdown() -> None:
    text = "    If you have built private packages, you can serve them\n    with apt. It is easy.\n"

    plain = [s.text for s in segment(text, markdown=False)]
    markdown = segment(text)

    assert plain == ["If you have built private packages, you can serve them\n    with apt.", "It is easy."]
    assert markdown == []


def test_a_full_stop_inside_a_word_does_not_end_the_sentence() -> None:
    # jq's README (tests/fixtures/howto/jq-README): "./configure" opens a line.
    text = "To build without bison or flex, add `--disable-maintainer-mode` to the\n./configure invocation:\n"

    assert [s.text for s in segment(text)] == [text.strip()]


def test_every_sentence_of_a_faq_question_paragraph_is_a_question_not_a_statement() -> None:
    # base-files' FAQ (tests/fixtures/howto/base-files-README)
    text = (
        "Q. I upgraded my system to the testing distribution and now my /etc/issue\n"
        'says "trixie/sid". Should it not read "trixie" or "testing"?\n\n'
        "A. That would be nice, but it is not possible because of the way the\n"
        "testing distribution works.\n"
    )

    sentences = segment(text, markdown=False)

    assert [s.is_statement for s in sentences if s.text.startswith(("Q.", "Should", "That"))] == [
        False,
        False,
        True,
    ]


def test_reference_marks_after_a_full_stop_stay_with_their_sentence_and_leave_it_complete() -> None:
    # Perplexity's 2026 per-thread Markdown puts its footnote marks after the full stop
    # ("houses.[^1][^3] Your"), which an import writes as "[1][3]" (docs/perplexity.md).
    text = "The 9 kW unit fits most houses.[1][3] Your quote lists a buffer tank.[2]\n"

    sentences = segment(text)

    assert [s.text for s in sentences] == [
        "The 9 kW unit fits most houses.[1][3]",
        "Your quote lists a buffer tank.[2]",
    ]
    assert all(s.is_complete for s in sentences)
    assert not segment("A line cut before its end [1]\n")[0].is_complete


def test_a_cited_files_sentences_and_its_commands_come_from_one_parse_of_its_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parses: list[str] = []
    parse = MarkdownIt.parse

    def counted(parser: MarkdownIt, text: str, env: MutableMapping[str, Any] | None = None) -> list[Token]:
        parses.append(text)
        return parse(parser, text, env)

    monkeypatch.setattr(MarkdownIt, "parse", counted)
    block_spans.cache_clear()
    text = "# Build\n\nTo build it from a *fresh* clone, run:\n\n    make install\n\nThen log in again.\n"
    source = SourceFile.of(text, SourceKind.MARKDOWN, 0)

    sentences, blocks = source.body_sentences, source.body_blocks

    assert [s.text for s in sentences] == [
        "Build",
        "To build it from a *fresh* clone, run:",
        "Then log in again.",
    ]
    assert [text[b.code_start : b.end] for b in blocks] == ["    make install"]
    assert parses == [text], "one parse for the sentences and the blocks"
