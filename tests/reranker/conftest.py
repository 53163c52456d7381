"""Fixtures of the reranker tests: the stand-in with dynamic int8, deterministic passages and candidates.

The stand-in cross-encoder itself (built once, ~30 s) is in ``tests/conftest.py``; the fault tests use it too.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from services.reranker.cross_encoder import MODEL_FILES, PROVENANCE_FILE, TOKENIZER_FILE
from services.reranker.provision import CONFIG_FILE, HEAD_FIT_TEXTS, ProvisionReport, quantize_int8
from shared.contracts import Candidate, Chunk, SourceKind


@pytest.fixture(scope="session")
def dynamic_int8_dir(standin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in with dynamic int8 recorded as served, as provisioning writes it for a model
    that passes the ranking check with it (the stand-in does not), to test its execution."""
    model_dir = tmp_path_factory.mktemp("reranker") / "dynamic"
    model_dir.mkdir()
    for name in (TOKENIZER_FILE, CONFIG_FILE, MODEL_FILES["fp32"]):
        (model_dir / name).symlink_to(standin_dir / name)
    quantize_int8(model_dir, "dynamic")
    report = ProvisionReport(
        name="stand-in, dynamic int8 for execution tests",
        int8_verified=True,
        int8_scheme="dynamic",
        spearman_int8_vs_fp32=0.0,
        spearman_by_scheme={},
        pairs_per_s={},
        served_precision="int8",
        detail="written by the test fixture, not by provisioning",
    )
    (model_dir / PROVENANCE_FILE).write_text(report.model_dump_json())
    return model_dir


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
