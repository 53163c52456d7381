"""Which Debian package and installed file each set is built from, and under what licence.

A source whose ``asks`` is set gives the questions (its headings that end in "?"); every section
of every source, asking or not, is a document of the set's corpus.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from provisioning.manuals.readers import (
    DOCBOOK_TEXT,
    ZSH_FAQ_TEXT,
    info_sections,
    numbered_text_sections,
    pod_sections,
)
from provisioning.manuals.sections import Section

Reader = Callable[[str, str], list[Section]]


@dataclass(frozen=True)
class Source:
    """One installed file: its package, path (gzip read as text), label in ids and titles."""

    package: str
    path: str
    document: str
    read: Reader
    asks: bool = False


@dataclass(frozen=True)
class EvalSetSpec:
    name: str
    summary: str
    sources: tuple[Source, ...]
    licences: dict[str, str]  # package -> licence of the text taken from it
    caveats: tuple[str, ...]


docbook_text: Reader = partial(numbered_text_sections, layout=DOCBOOK_TEXT)
zsh_faq_text: Reader = partial(numbered_text_sections, layout=ZSH_FAQ_TEXT)

INFO = "/usr/share/info"
POD = "/usr/share/perl/5.36.0/pod"
PERL_DISTRACTORS = (
    *("perlsyn", "perldata", "perlop", "perlsub", "perlref", "perlreftut", "perldsc", "perllol"),
    *("perlre", "perlrequick", "perlretut", "perlvar", "perlmod", "perlobj", "perlootut", "perlipc"),
    *("perlopentut", "perlport", "perlsec", "perltrap", "perlstyle", "perldebtut", "perlpacktut"),
    "perlrun",
)
GNU_MANUAL_NOTICE = (
    "verbatim and modified copies permitted provided the copyright notice and an identical "
    "permission notice are kept (the permissive notice of GNU manuals; DFSG-free, Debian main)"
)

SETS = (
    EvalSetSpec(
        name="debian-faq",
        summary="Debian system use and administration: the Debian FAQ, with the Debian Reference as "
        "distractors",
        sources=(
            Source(
                "debian-faq",
                "/usr/share/doc/debian/FAQ/debian-faq.en.txt.gz",
                "debian-faq",
                docbook_text,
                asks=True,
            ),
            Source(
                "debian-reference-en",
                "/usr/share/debian-reference/debian-reference.en.txt.gz",
                "debian-reference",
                docbook_text,
            ),
        ),
        licences={
            "debian-faq": f"Copyright 1996-2021 Software in the Public Interest; {GNU_MANUAL_NOTICE}",
            "debian-reference-en": "Copyright 2007-2013 Osamu Aoki; GPL-2+ (DFSG-free, Debian main)",
        },
        caveats=(
            "The Debian Reference answers some FAQ questions too (package management, upgrades); "
            "those sections are not in qrels, so a retriever that finds them is scored as missing.",
            "The text is DocBook rendered to plain text: URLs are broken across lines as "
            "'(https://\\n www...)', and tables are drawn with '|' and '-'.",
        ),
    ),
    EvalSetSpec(
        name="r-faq",
        summary="The R statistical system: the R FAQ, with six R manuals (Info) as distractors",
        sources=(
            Source("r-doc-info", f"{INFO}/R-FAQ.info.gz", "R-FAQ", info_sections, asks=True),
            *(
                Source("r-doc-info", f"{INFO}/{manual}.info.gz", manual, info_sections)
                for manual in ("R-intro", "R-data", "R-admin", "R-lang", "R-exts", "R-ints")
            ),
        ),
        licences={
            "r-doc-info": "R FAQ: Copyright 1998-2020 Kurt Hornik, 2021-2022 R Core Team, GPL-2+; "
            f"the other manuals: Copyright R Core Team and authors, {GNU_MANUAL_NOTICE}",
        },
        caveats=(
            "Info text: cross-references read '*note Name: Node.', code is indented five spaces.",
            "R-intro and R-admin answer a few FAQ questions at greater length (installing packages, "
            "the startup files); those sections are not in qrels.",
        ),
    ),
    EvalSetSpec(
        name="perlfaq",
        summary="Perl programming: perlfaq1-9, with 24 core Perl manual pages (POD) as distractors",
        sources=(
            *(
                Source("perl-doc", f"{POD}/perlfaq{part}.pod", f"perlfaq{part}", pod_sections, asks=True)
                for part in range(1, 10)
            ),
            *(Source("perl-doc", f"{POD}/{page}.pod", page, pod_sections) for page in PERL_DISTRACTORS),
        ),
        licences={
            "perl-doc": "perlfaq: Copyright 1997-2010 Tom Christiansen, Nathan Torkington and others, "
            "'free; you can redistribute it and/or modify it under the same terms as Perl itself'; "
            "the other pages: Perl's licence, GPL-1+ or Artistic (DFSG-free, Debian main)",
        },
        caveats=(
            "POD source: formatting codes (C<...>, L<...>) and directives (=item, =over) are kept "
            "as written; the queries are the headings as Pod::Text renders them.",
            "perlfaq.pod (the index listing every question) and perlunifaq (its own Q&A) are left "
            "out; perlop, perlre and perlvar still answer some questions in part.",
        ),
    ),
    EvalSetSpec(
        name="zsh-faq",
        summary="The Z shell: the zsh FAQ (plain text), with the zsh manual (Info) as distractors",
        sources=(
            Source("zsh-common", "/usr/share/doc/zsh-common/FAQ.gz", "zsh-FAQ", zsh_faq_text, asks=True),
            Source("zsh-doc", f"{INFO}/zsh.info.gz", "zsh-manual", info_sections),
        ),
        licences={
            "zsh-common": "zsh FAQ: Copyright 1995-2020 Peter W. Stephenson; use, copy, modify and "
            "distribute for any purpose, notice kept (licence PWS-Zsh-FAQ, DFSG-free)",
            "zsh-doc": "zsh manual: the Zsh licence (MIT-like; DFSG-free, Debian main)",
        },
        caveats=(
            "Fewer than 60 questions: the FAQ asks only this many in its headings.",
            "Yodl's text output starts each paragraph at column 0 and indents its other lines by "
            "two spaces; it is kept as it is.",
        ),
    ),
)
