"""``hindsight reset`` as a user runs it, on a stopped local stack: it empties the index (through the
store's own ``clear``) and leaves the user's files alone."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from shared.contracts import Chunk, Document, SourceKind
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from tests.conftest import models_dir, run_hindsight


def test_reset_empties_the_index_and_keeps_the_users_files(tmp_path: Path) -> None:
    note = tmp_path / "library" / "bread.md"
    note.parent.mkdir()
    note.write_text("# Bread\n\nSourdough starter feeding schedule.\n")
    settings = Settings(data_dir=tmp_path / "data")
    store = LanceDBStore(settings.store_dir, OnnxEmbedder.dimension)
    document = Document(
        id="bread", source_uri=str(note), kind=SourceKind.MARKDOWN, title="Bread", content_hash="h"
    )
    text = "Sourdough starter feeding schedule."
    chunk = Chunk(id="bread:0", document_id="bread", ordinal=0, text=text, char_start=0, char_end=len(text),
                  title="Bread", source_uri=str(note), kind=SourceKind.MARKDOWN)  # fmt: skip
    store.replace_documents([document], [chunk], np.ones((1, OnnxEmbedder.dimension), dtype=np.float32))
    env = {
        **os.environ,
        "HINDSIGHT_DATA_DIR": str(settings.data_dir),
        "HINDSIGHT_MODELS_DIR": str(models_dir()),
    }

    output = run_hindsight(env, "reset", "--yes")

    assert "deleted the index" in output and "untouched" in output
    reopened = LanceDBStore(settings.store_dir, OnnxEmbedder.dimension)
    assert reopened.count_chunks() == 0 and reopened.manifest() == {}
    assert note.read_text().startswith("# Bread"), "the user's file is untouched"
