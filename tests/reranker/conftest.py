"""Fixtures of the reranker tests: deterministic passages and candidates.

The stand-in cross-encoder itself (built once, ~30 s) is in ``tests/conftest.py``; the fault tests use it too.
"""

from __future__ import annotations

import random

from provisioning.calibration import FIT_TEXTS
from shared.contracts import Candidate, Chunk, SourceKind


def passages(count: int, seed: int = 0) -> list[str]:
    """Deterministic passages of varied length (one to twelve sentences)."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(FIT_TEXTS, k=rng.randint(1, 12))) for _ in range(count)]


def candidates(texts: list[str]) -> list[Candidate]:
    return [
        Candidate(
            chunk=Chunk(
                id=f"c{i}",
                document_id="d",
                ordinal=i,
                text=text,
                char_start=0,
                char_end=len(text),
                title="notes",
                source_uri="notes.md",
                kind=SourceKind.MARKDOWN,
            ),
            fused_score=1.0 / (i + 1),
        )
        for i, text in enumerate(texts)
    ]
