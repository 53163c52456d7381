"""A real store, the real embedder and settings confined to one root, for the file-side attacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from tests.conftest import require_embedder


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2", threads=1)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    root.mkdir()
    return root


@pytest.fixture
def settings(tmp_path: Path, library: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        models_dir=require_embedder(),
        roots=[library],
        chunk_tokens=64,
        chunk_overlap=12,
        max_file_bytes=200_000,
    )


@pytest.fixture
def store(settings: Settings, embedder: OnnxEmbedder) -> LanceDBStore:
    return LanceDBStore(settings.store_dir, embedder.dimension)
