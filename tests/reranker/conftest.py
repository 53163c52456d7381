"""Shared fixtures: the stand-in cross-encoder (built once, ~30 s) and a private redis-server."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from services.reranker.provision import (
    HEAD_FIT_TEXTS,
    ProvisionReport,
    build_standin,
)
from shared.contracts import Candidate, Chunk, SourceKind


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ProvisionReport]:
    """The offline stand-in, provisioned exactly as ``hindsight models prepare --standin-reranker``."""
    model_dir = tmp_path_factory.mktemp("reranker") / "standin"
    return model_dir, build_standin(model_dir)


@pytest.fixture(scope="session")
def standin_dir(standin: tuple[Path, ProvisionReport]) -> Path:
    return standin[0]


def passages(count: int, seed: int = 0) -> list[str]:
    """Deterministic passages of varied length (one to twelve sentences)."""
    rng = random.Random(seed)
    sentences = [text for pair in HEAD_FIT_TEXTS for text in pair]
    return [" ".join(rng.choices(sentences, k=rng.randint(1, 12))) for _ in range(count)]


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
