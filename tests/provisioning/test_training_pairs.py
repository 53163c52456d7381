"""The cross-encoder's training pairs: manuals read as sections, questions paired with their own text,
and no evaluation package among the training packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.evalsets.catalog import SETS
from provisioning.manuals.faqs import faq_sections
from provisioning.manuals.files import read_text
from provisioning.manuals.html import html_sections
from provisioning.manuals.manpages import manpage_sections, name_line, render_manpage
from provisioning.manuals.sections import Section
from provisioning.reranker_training.packages import (
    EVALUATION_PACKAGES,
    TRAINING_PACKAGES,
    check_disjoint,
)
from provisioning.reranker_training.pairs import build_pairs, windows

SED_PAGE = Path("/usr/share/man/man1/sed.1.gz")  # sed is Essential: every Debian system has it
SED_FAQ = Path("/usr/share/doc/sed/sedfaq.txt.gz")


def test_a_manual_page_is_read_as_its_sections_with_the_commands_summary() -> None:
    sections = manpage_sections("man:sed.1", render_manpage(SED_PAGE))

    headings = [s.heading for s in sections]
    assert headings[:3] == ["NAME", "SYNOPSIS", "DESCRIPTION"]
    assert name_line(sections) == ("sed", "stream editor for filtering and transforming text")
    description = sections[2].body
    assert "Sed is a stream editor" in description and "\\fB" not in description


@pytest.mark.skipif(not SED_FAQ.exists(), reason=f"{SED_FAQ} is not installed (docs excluded by dpkg)")
def test_a_plain_text_faq_gives_each_question_once_with_its_answer() -> None:
    sections = faq_sections("faq:sed", read_text(SED_FAQ))

    questions = [s.heading for s in sections]
    assert "What is sed?" in questions
    assert len(questions) == len(set(questions))
    answer = next(s.body for s in sections if s.heading == "What is sed?")
    assert answer.startswith('"sed" stands for Stream EDitor.') and len(answer.split()) >= 15


def test_html_sections_take_blocks_under_each_heading_and_skip_navigation() -> None:
    # The shape of PostgreSQL's DocBook HTML (postgresql-doc-15): navigation header, h2, paragraphs, pre.
    markup = b"""<html><body><div class="navheader"><nav><p>Prev Up Next</p></nav></div>
    <h2 class="title">22.2. Creating a Database</h2><p>In order to create a database, the
    PostgreSQL server must be up and running.</p><pre class="programlisting">CREATE DATABASE name;</pre>
    <h3>22.2.1. Template Databases</h3><ul><li><p>template1 is copied</p></li></ul></body></html>"""

    sections = html_sections("html:pg", markup)

    assert [s.heading for s in sections] == ["22.2. Creating a Database", "22.2.1. Template Databases"]
    assert sections[0].body.endswith("CREATE DATABASE name;") and "Prev" not in sections[0].body
    assert sections[1].body == "template1 is copied"


def section(document: str, heading: str, body: str, chapter: str = "") -> Section:
    return Section(document, chapter or heading, heading, body)


def test_headings_become_queries_paired_with_the_first_window_of_their_own_section() -> None:
    long_body = "\n".join(f"line {n} " + "word " * 30 for n in range(20))
    documents = {
        "info:tar": [
            section("info:tar", "Overview", "word " * 40),
            section("info:tar", "4.2 Changing How 'tar' Writes Files", long_body),
        ],
        "info:a": [section("info:a", "Getting Help", "help " * 30)],
        "info:b": [section("info:b", "Getting Help", "help " * 30)],
        "info:c": [section("info:c", "Getting Help", "help " * 30)],
    }

    passages, queries = build_pairs(documents)

    assert [q.query for q in queries] == ["Changing How 'tar' Writes Files"]  # no topic, or three sections
    positive = passages[queries[0].positive]
    assert positive.section == queries[0].section == "info:tar#1"
    assert positive.text == windows(long_body)[0] and long_body.startswith(positive.text)
    assert len([p for p in passages if p.section == "info:tar#1"]) == len(windows(long_body)) > 1


def test_a_manual_pages_summary_asks_for_its_description() -> None:
    documents = {
        "man:sed.1": [
            section("man:sed.1", "NAME", "sed - stream editor for filtering and transforming text"),
            section("man:sed.1", "DESCRIPTION", "Sed is a stream editor. " * 10),
            section("man:sed.1", "EXIT STATUS", "An exit status of zero indicates success. " * 5),
        ]
    }

    passages, queries = build_pairs(documents)

    asked = {q.query: passages[q.positive].section for q in queries}
    assert asked == {
        "stream editor for filtering and transforming text": "man:sed.1#1",
        "sed exit status": "man:sed.1#2",
    }


def test_no_evaluation_package_is_trained_on() -> None:
    assert not set(TRAINING_PACKAGES) & set(EVALUATION_PACKAGES)
    built_from = {source.package for spec in SETS for source in spec.sources}
    assert built_from <= set(EVALUATION_PACKAGES)
    with pytest.raises(ValueError, match="sudo"):
        check_disjoint(("coreutils", "sudo"))
