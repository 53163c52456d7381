"""The evaluation-set builder (``bench/build_sets.py``) and the sets it committed under ``bench/sets``.

The readers are fed excerpts of the real sources (the Debian FAQ's text rendering, the R FAQ's Info
file, perlfaq's POD): wrapped headings, no-break-space indentation, menus and index markers are
what those files contain. The committed sets are checked for what the benches rely on: ids that
resolve, every query answered, answers that do not contain their own question, hard-wrapped text.
Where the source packages are installed (``apt-get install debian-faq debian-reference-en
r-doc-info perl-doc zsh-common zsh-doc``) a rebuild must reproduce the committed files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.evalsets.answers import relevant_sections
from bench.evalsets.beir import MissingPackageError, build
from bench.evalsets.catalog import SETS, EvalSetSpec, Source, docbook_text
from provisioning.manuals.readers import info_sections, pod_sections
from provisioning.manuals.sections import Section, section_body
from tests.conftest import REPO

SETS_DIR = REPO / "bench" / "sets"
NBSP = "\xa0"

DEBIAN_FAQ_EXCERPT = f"""\
Table of Contents

1. Definitions and overview
    1.1. What is this FAQ?

Chapter{NBSP}1.{NBSP}Definitions and overview

1.1.{NBSP}What is this FAQ?

    This document gives frequently asked questions (with their
    answers!) about the Debian distribution (Debian GNU/Linux and
    others) and about the Debian project.

1.5.{NBSP}What is the difference between Debian GNU/Linux and other Linux
distributions? Why should I choose Debian over some other
distribution?

    Open development:

        Debian developers contribute to the project not by writing
        new applications (in most cases), but by packaging existing
{NBSP}{NBSP}{NBSP}     software according to the standards of the project, by
        communicating bug reports to upstream developers.
"""

R_FAQ_EXCERPT = """\
This is R-FAQ.info, produced by texi2any version 6.8 from R-FAQ.texi.
\x1f
File: R-FAQ.info,  Node: R Add-On Packages,  Up: Top

5 R Add-On Packages
*******************

* Menu:

* Which add-on packages exist for R?::
\x1f
File: R-FAQ.info,  Node: Which add-on packages exist for R?,  Up: R Add-On Packages

5.1 Which add-on packages exist for R?
======================================

* Menu:

* Add-on packages in R::
* Add-on packages from CRAN::
\x1f
File: R-FAQ.info,  Node: Add-on packages in R,  Up: Which add-on packages exist for R?

5.1.1 Add-on packages in R
--------------------------

The R distribution comes with the following packages:

'base'
     The basic R functions and datasets.
\x1f
File: R-FAQ.info,  Node: Add-on packages from CRAN,  Up: Which add-on packages exist for R?

5.1.2 Add-on packages from CRAN
-------------------------------

The CRAN 'src/contrib' area contains a wide range of add-on packages.
\x1f
File: R-FAQ.info,  Node: Index,  Prev: Acknowledgments,  Up: Top

Index
*****

\x00\x08[index\x00\x08]
* Menu:

* add-on packages:                       Which add-on packages exist for R?.
\x1f
Tag Table:
Node: Top\x7f295
\x1f
End Tag Table
"""

PERLFAQ_EXCERPT = """\
=head1 Data: Misc

=head2 Why don't my E<lt>E<lt>HERE documents work?

Here documents are found in L<perlop>. Check for these three things:

=over 4

=item There must be no space after the E<lt>E<lt> part.

=back

=head2 How can I get C<#!perl> to work on [MS-DOS,NT,...]?

For OS/2 just use

    extproc perl -S -your_switches

=cut
"""


def test_docbook_text_skips_the_contents_joins_wrapped_headings_and_reads_nbsp_indent_as_spaces() -> None:
    sections = docbook_text("debian-faq", DEBIAN_FAQ_EXCERPT)
    assert [section.heading for section in sections] == [
        "Chapter 1. Definitions and overview",
        "1.1. What is this FAQ?",
        "1.5. What is the difference between Debian GNU/Linux and other Linux distributions? "
        "Why should I choose Debian over some other distribution?",
    ]
    assert sections[0].body == "" and sections[0].question is None
    assert sections[1].body.startswith(
        "This document gives frequently asked questions (with their\nanswers!)"
    )
    assert sections[2].chapter == "Chapter 1. Definitions and overview"
    assert sections[2].question is not None and sections[2].question.startswith("What is the difference")
    assert (
        "\n    software according to the standards" in sections[2].body
    )  # nested indent kept, NBSPs as spaces
    assert NBSP not in sections[2].body


def test_info_reader_takes_headings_from_underlines_and_drops_menus_index_markers_and_tag_table() -> None:
    sections = info_sections("R-FAQ", R_FAQ_EXCERPT)
    assert [section.heading for section in sections] == [
        "5 R Add-On Packages",
        "5.1 Which add-on packages exist for R?",
        "5.1.1 Add-on packages in R",
        "5.1.2 Add-on packages from CRAN",
        "Index",
    ]
    assert [section.body for section in sections][:2] == ["", ""]  # a menu is not an answer
    assert sections[4].body == ""  # the index is markers and a menu
    assert sections[2].chapter == "5 R Add-On Packages"
    assert sections[2].body == (
        "The R distribution comes with the following packages:\n\n"
        "'base'\n     The basic R functions and datasets."
    )


def test_a_question_without_text_of_its_own_is_answered_by_its_numbered_subsections() -> None:
    sections = info_sections("R-FAQ", R_FAQ_EXCERPT)
    assert relevant_sections(sections, 1) == [2, 3]
    lone = [Section("R-FAQ", "5 R Add-On Packages", "5.2 How can add-on packages be installed?", "")]
    assert relevant_sections(lone, 0) == "no answer text, and no numbered subsection with one"


@pytest.mark.skipif(shutil.which("pod2text") is None, reason="perl's pod2text renders POD headings")
def test_pod_headings_are_rendered_by_pod_text_and_bodies_stay_raw_pod() -> None:
    sections = pod_sections("perlfaq4", PERLFAQ_EXCERPT)
    assert [section.question for section in sections] == [
        None,
        "Why don't my <<HERE documents work?",
        'How can I get "#!perl" to work on [MS-DOS,NT,...]?',
    ]
    assert sections[1].chapter == "Data: Misc"
    assert sections[1].body.splitlines()[-1] == "=back"  # POD kept as written
    assert sections[2].body == "For OS/2 just use\n\n    extproc perl -S -your_switches"  # =cut dropped


def test_a_heading_with_a_question_mark_asks_unless_it_is_a_chapter_title() -> None:
    asks = Section(
        "zsh-FAQ", "Chapter 2: Differences", "2.3: Why do my csh aliases not work? (Plus others.)", "x"
    )
    topic = Section(
        "zsh-FAQ", "Chapter 2: How does zsh differ from...?", "Chapter 2: How does zsh differ from...?", "x"
    )
    statement = Section(
        "R-FAQ", "7 R Miscellanea", "7.30 I installed a package but the functions are not there", "x"
    )
    assert asks.question == "Why do my csh aliases not work? (Plus others.)"
    assert topic.question is None and statement.question is None


def test_a_missing_package_is_named_with_the_command_that_installs_it() -> None:
    spec = EvalSetSpec(
        name="missing",
        summary="",
        sources=(Source("hindsight-no-such-package", "/nonexistent", "x", docbook_text, asks=True),),
        licences={},
        caveats=(),
    )
    with pytest.raises(MissingPackageError, match="apt-get install hindsight-no-such-package"):
        build(spec)


def load(folder: Path) -> tuple[dict[str, dict[str, str]], dict[str, str], list[list[str]]]:
    corpus = {row["_id"]: row for row in map(json.loads, (folder / "corpus.jsonl").read_text().splitlines())}
    queries = {
        row["_id"]: row["text"]
        for row in map(json.loads, (folder / "queries.jsonl").read_text().splitlines())
    }
    rows = [line.split("\t") for line in (folder / "qrels.tsv").read_text().splitlines()]
    assert rows[0] == ["query-id", "corpus-id", "score"]
    return corpus, queries, rows[1:]


@pytest.mark.parametrize("name", [spec.name for spec in SETS])
def test_committed_set_resolves_every_id_and_keeps_questions_out_of_their_answers(name: str) -> None:
    corpus, queries, qrels = load(SETS_DIR / name)
    assert len(corpus) >= 200 and len(queries) >= 55
    answered = {query for query, _, _ in qrels}
    assert answered == set(queries)
    for query, doc, score in qrels:
        assert doc in corpus and score == "1"
        answer = corpus[doc]
        assert queries[query] not in answer["text"] and queries[query] not in answer["title"]
    lines = [line for row in corpus.values() for line in row["text"].splitlines()]
    assert sum(len(line) > 100 for line in lines) < 0.005 * len(lines)  # hard-wrapped, as the sources are


def installed(package: str) -> bool:
    status = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Status}", package], capture_output=True, text=True
    )
    return status.stdout == "installed"


@pytest.mark.skipif(
    shutil.which("dpkg-query") is None
    or not all(installed(source.package) for spec in SETS for source in spec.sources),
    reason="the sets' Debian packages are not installed here",
)
def test_rebuilding_from_the_installed_packages_reproduces_the_committed_sets() -> None:
    check = subprocess.run(
        [sys.executable, "bench/build_sets.py", "--check"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # as bench/README.md runs it
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr


def test_a_footnote_rule_at_the_margin_does_not_keep_the_prose_indented_as_code() -> None:
    lines = ["    Private packages can be", "    served by apt.", "", "-" * 20, "", "    ^[2] A footnote."]

    rule = "-" * 20
    assert section_body(lines) == f"Private packages can be\nserved by apt.\n\n{rule}\n\n^[2] A footnote."
