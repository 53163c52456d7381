"""Turn a set's sources into BEIR files: ``corpus.jsonl``, ``queries.jsonl``, ``qrels.tsv``.

Document ids are ``<document>#<n>``, n the section's position in its source; a document's title is
``<document>: <chapter>`` for every section alike (the section's own heading is left out, so the
question is never in its answer). A query is an asking source's question heading; its relevant
documents are the sections that answer it (``answers.relevant_sections``). The same question
asked twice is one query with both answers relevant.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bench.evalsets.answers import relevant_sections
from bench.evalsets.catalog import EvalSetSpec, Source
from provisioning.manuals.files import manual_text
from provisioning.manuals.sections import Section


class MissingPackageError(RuntimeError):
    pass


def package_version(package: str) -> str:
    """The installed version of a Debian package; MissingPackageError names the apt command."""
    query = subprocess.run(
        ["dpkg-query", "-W", "-f", "${db:Status-Status} ${Version}", package],
        capture_output=True,
        text=True,
    )
    status, _, version = query.stdout.partition(" ")
    if query.returncode != 0 or status != "installed":
        raise MissingPackageError(f"package {package} is not installed: apt-get install {package}")
    return version


def read_source(source: Source) -> str:
    """The installed file's text; a split Info manual's parts are appended in order."""
    path = Path(source.path)
    if not path.exists():
        raise MissingPackageError(f"{path} is missing: apt-get install --reinstall {source.package}")
    return manual_text(path)


@dataclass
class BuiltSet:
    """A set ready to write: BEIR rows in source order, and the package versions they came from."""

    spec: EvalSetSpec
    versions: dict[str, str]
    corpus: list[dict[str, str]] = field(default_factory=list)
    queries: list[dict[str, str]] = field(default_factory=list)
    qrels: list[tuple[str, str]] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)  # questions left out, with the reason


def build(spec: EvalSetSpec) -> BuiltSet:
    built = BuiltSet(spec, {source.package: package_version(source.package) for source in spec.sources})
    asked: dict[str, tuple[str, list[str]]] = {}  # folded question -> (query id, relevant ids)
    for source in spec.sources:
        sections = source.read(source.document, read_source(source))
        ids = [f"{source.document}#{position}" for position in range(len(sections))]
        for doc_id, section in zip(ids, sections, strict=True):
            if section.body:
                built.corpus.append({"_id": doc_id, "title": title(section), "text": section.body})
        if source.asks:
            for position in range(len(sections)):
                ask(built, asked, sections, ids, position)
    for query_id, relevant in asked.values():
        built.qrels.extend((query_id, doc_id) for doc_id in relevant)
    return built


def ask(
    built: BuiltSet,
    asked: dict[str, tuple[str, list[str]]],
    sections: list[Section],
    ids: list[str],
    position: int,
) -> None:
    """Record the question of the section at ``position``, if it asks one, with its answers."""
    question, doc_id = sections[position].question, ids[position]
    if question is None:
        return
    answer = relevant_sections(sections, position)
    if isinstance(answer, str):
        built.unanswered.append(f"{doc_id} {question!r}: {answer}")
        return
    relevant = [ids[position] for position in answer]
    key = " ".join(question.casefold().split())
    if key in asked:
        asked[key][1].extend(doc for doc in relevant if doc not in asked[key][1])
    else:
        asked[key] = (doc_id, relevant)
        built.queries.append({"_id": doc_id, "text": question})


def title(section: Section) -> str:
    return f"{section.document}: {section.chapter}"


def write(built: BuiltSet, folder: Path) -> None:
    """Write the three BEIR files (UTF-8, one JSON object a line, every relevance score 1)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(jsonl(built.corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text(jsonl(built.queries), encoding="utf-8")
    rows = "".join(f"{query}\t{doc}\t1\n" for query, doc in built.qrels)
    (folder / "qrels.tsv").write_text(f"query-id\tcorpus-id\tscore\n{rows}", encoding="utf-8")


def jsonl(rows: list[dict[str, str]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
