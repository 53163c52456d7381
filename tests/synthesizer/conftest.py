"""Files chunked as the indexer chunks them, and the extractive map and reduce run in-process (no
LLM, no worker), for the synthesizer's tests."""

from __future__ import annotations

import hashlib
from pathlib import Path

from services.synthesizer.extractive import extract_facts
from services.synthesizer.reduce import ReduceLimits, synthesize_answer
from services.synthesizer.stages import split_into_batches
from shared.contracts import Answer, Chunk, SourceKind
from shared.interfaces import Embedder
from shared.markdown_source import split_front_matter
from shared.settings import Settings
from testing.sample_candidates import reranked_question

LIMITS = ReduceLimits.from_settings(Settings())


def chunks_of(path: Path, title: str, size: int = 0) -> list[Chunk]:
    """The file's body as the indexer sees it, in chunks of ``size`` characters (one chunk if 0); a
    ``.txt`` file is plain text, anything else Markdown."""
    raw = path.read_text()
    body = raw[split_front_matter(raw)[1] :]
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
            kind=SourceKind.TEXT if path.suffix == ".txt" else SourceKind.MARKDOWN,
        )
        for n, start in enumerate(range(0, len(body), size))
    ]


def ask(question: str, chunks: list[Chunk], embedder: Embedder) -> Answer:
    """Map and reduce without an LLM."""
    state = reranked_question(question, chunks)
    results = [extract_facts(batch, embedder) for batch in split_into_batches(state, 10)]
    answer, _ = synthesize_answer(state, results, None, LIMITS)
    return answer
