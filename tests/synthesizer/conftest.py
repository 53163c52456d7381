"""What the synthesizer's tests share: the temp folder as the roots a cited file is read under
(``shared.source_text``), as the workers read it; files chunked as the indexer loads them; and the
extractive map and reduce run in-process (no LLM, no worker)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.indexer.loaders import load_document
from services.synthesizer.extractive import extract_facts
from services.synthesizer.reduce import ReduceLimits, synthesize_answer
from services.synthesizer.stages import split_into_batches
from shared.contracts import Answer, Chunk
from shared.interfaces import Embedder
from shared.settings import Settings, get_settings
from shared.thread_address import perplexity_address
from testing.sample_candidates import reranked_question

LIMITS = ReduceLimits.from_settings(Settings().synthesis)


@pytest.fixture(autouse=True)
def roots_are_the_tests_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HINDSIGHT_ROOTS", str(tmp_path.resolve()))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def chunks_of(path: Path, title: str, size: int = 0) -> list[Chunk]:
    """The file's text as the indexer loads it (``load_document``: a Markdown file's body after its
    front matter, ``body_start`` where it starts, a thread's address), in chunks of ``size`` characters
    (one chunk if 0)."""
    loaded = load_document(path, 10_000_000)
    body = loaded.text
    document_id = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    size = size or len(body)
    return [
        Chunk(
            id=f"{document_id}:{n}",
            document_id=document_id,
            ordinal=n,
            text=body[start : start + size],
            char_start=start,
            char_end=min(start + size, len(body)),
            title=title,
            source_uri=str(path),
            kind=loaded.kind,
            body_start=loaded.body_start,
            source_url=perplexity_address(loaded.metadata.get("url")),
        )
        for n, start in enumerate(range(0, len(body), size))
    ]


def ask(question: str, chunks: list[Chunk], embedder: Embedder) -> Answer:
    """Map and reduce without an LLM."""
    state = reranked_question(question, chunks)
    results = [extract_facts(batch, embedder) for batch in split_into_batches(state, 10)]
    answer, _ = synthesize_answer(state, results, None, LIMITS)
    return answer
