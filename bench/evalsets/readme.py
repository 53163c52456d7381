"""The README written beside each set: where it came from, under what licence, what it holds."""

from __future__ import annotations

from bench.evalsets.beir import BuiltSet

HOW_BUILT = """\
Every section of every source listed above is one document: its own body up to the next heading of any
level (subsections are documents of their own), with the source's hard-wrapped lines kept as they
are; only the heading, the common indentation, leading no-break spaces (read as spaces) and
trailing spaces are removed, and empty sections are left out. A document's title is
`<source>: <chapter>`, the same for every section of a chapter, so the question is never in the
text or the title of its answer. Each heading of the FAQ source that asks something (it contains
"?" and is not a chapter title) is a query, verbatim less its number; its relevant document
(score 1) is that section, or, when the section has no text of its own, its numbered subsections.
The same question asked twice is one query with both answers relevant. All other sections are
distractors."""


def readme(built: BuiltSet) -> str:
    spec = built.spec
    sources = "\n".join(
        f"| `{source.package}` {built.versions[source.package]} | `{source.path}` | "
        f"{'questions and documents' if source.asks else 'documents'} |"
        for source in spec.sources
    )
    licences = "\n".join(f"- `{package}`: {licence}" for package, licence in spec.licences.items())
    corpus_chars = sum(len(row["text"]) for row in built.corpus)
    left_out = "".join(f"\n- {reason}" for reason in built.unanswered) or " none."
    caveats = "\n".join(f"- {caveat}" for caveat in spec.caveats)
    return f"""# {spec.name}

{spec.summary}. Built by `bench/build_sets.py {spec.name}` from the installed Debian packages
(Debian 12); rebuilding with the same package versions gives the same files.

| package | file | gives |
|---|---|---|
{sources}

## Licence

{licences}

## Counts

{len(built.corpus)} documents ({corpus_chars:,} characters of text), {len(built.queries)} queries,
{len(built.qrels)} qrels rows. Questions left out:{left_out}

## How it was built

{HOW_BUILT}

## Caveats

- Judgements are incomplete: only the FAQ's own answer is relevant; another section that answers
  too counts as a miss.
{caveats}
"""
