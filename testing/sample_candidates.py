"""Candidates built from real text: the repository's sample notes plus a few written here.

Each document is split into paragraph chunks whose spans index its text exactly, as the indexer's
chunks do, so citations can be checked verbatim against them.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path

from shared.contracts import Candidate, Chunk, Plan, RerankedQuestion, RerankOutcome, SourceKind

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
NOT_PROSE = ("#", "---", "Sources:")
PARAGRAPH = re.compile(r"\S(?:.|\n(?!\s*\n))*")

EXTRA_DOCUMENTS = {
    "Espresso dialling in": (
        "# Espresso dialling in\n\nA standard double shot uses 18 grams of coffee in and about 36 grams of "
        "espresso out, pulled in 25 to 30 seconds. If the shot runs fast and tastes sour, grind finer.\n\n"
        "Water at 93 degrees Celsius suits medium roasts; darker roasts prefer 90 degrees.\n\n"
        "The grinder was recalibrated on 2026-02-14 after the burrs were replaced."
    ),
    "Python packaging notes": (
        "# Python packaging notes\n\nProjects declare their build backend in pyproject.toml under "
        "[build-system]. Editable installs use `pip install -e .` so changes apply without reinstalling.\n\n"
        "Optional dependency groups such as `dev` are installed with `pip install -e '.[dev]'`.\n\n"
        "Wheels are built with `python -m build` and uploaded with twine."
    ),
    "Garden log": (
        "# Garden log\n\nTomatoes were planted out on 2026-05-10 once night temperatures stayed above "
        "10 degrees Celsius. They need watering every second day in July.\n\n"
        "The basil bolted early because the bed gets full afternoon sun."
    ),
}


def document_chunks(title: str, text: str, source_uri: str) -> list[Chunk]:
    document_id = hashlib.sha256(source_uri.encode()).hexdigest()[:16]
    return [
        Chunk(
            id=f"{document_id}:{ordinal}",
            document_id=document_id,
            ordinal=ordinal,
            text=match.group(0),
            char_start=match.start(),
            char_end=match.end(),
            title=title,
            source_uri=source_uri,
            kind=SourceKind.MARKDOWN,
        )
        for ordinal, match in enumerate(PARAGRAPH.finditer(text))
        if len(match.group(0)) > 40 and not match.group(0).startswith(NOT_PROSE)
    ]


def documents(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Title → text of every test document."""
    texts = {path.stem.split(" (")[0]: path.read_text() for path in sorted(SAMPLES.rglob("*.*"))}
    return {**texts, **EXTRA_DOCUMENTS, **(extra or {})}


def all_chunks(extra: dict[str, str] | None = None) -> list[Chunk]:
    return [
        chunk
        for title, text in documents(extra).items()
        for chunk in document_chunks(title, text, f"file:///notes/{title}.md")
    ]


def reranked_question(question: str, chunks: list[Chunk]) -> RerankedQuestion:
    """A question whose retrieval and reranking already happened: every chunk is a candidate, in the
    given order, passed through as a reranker without a model passes them."""
    return RerankedQuestion(
        question_id=uuid.uuid4().hex,
        question=question,
        plan=Plan(variations=[question]),
        candidates=[Candidate(chunk=chunk) for chunk in chunks],
        rerank=RerankOutcome(
            received=len(chunks),
            kept=len(chunks),
            threshold=-5.0,
            fallback_k=20,
            used_fallback=False,
            model=None,
        ),
    )
