"""A small real corpus: files on disk, chunked by exact spans, embedded by the real ONNX model, in LanceDB.

Markdown files carry front matter and multi-byte characters before their keywords, so the exact
leg's byte-to-character mapping is exercised for real.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import pytest

from services.retriever.search import RetrievalConfig
from shared.contracts import Chunk, Document, SourceKind, Strategy
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from tests.conftest import models_dir


def retrieval_config(**overrides: object) -> RetrievalConfig:
    """The settings' configuration with every fusion weight 1 unless ``overrides`` say otherwise."""
    base = RetrievalConfig.from_settings(Settings().retrieval, Strategy.PRECISE)
    return replace(base, **{"weights": {}, **overrides})  # type: ignore[arg-type]


FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n", re.DOTALL)
WINDOW_CHARS = 220
OVERLAP_CHARS = 60

CORPUS: dict[str, str] = {
    "python/gil.md": """---
title: The GIL
space: python
updated: 2024-03-01
---
# The global interpreter lock

Café notes ☕ — naïve threading: the global interpreter lock (GIL) lets only one thread run Python
bytecode at a time, so CPU-bound threads do not run in parallel on several cores.

The interpreter switches threads every few milliseconds; sys.setswitchinterval changes how often.
Memory allocation can be debugged by setting PYTHONMALLOC=debug before starting the interpreter.

Use multiprocessing or a process pool to use several cores for CPU-bound work instead of threads.
""",
    "python/asyncio.md": """---
title: Asyncio notes
space: python
updated: 2024-06-15
---
# Event loops

An event loop runs coroutines cooperatively: each await hands control back to the loop.
asyncio.TaskGroup waits for every task it started and cancels the rest when one fails.

Calling the loop after shutdown raises RuntimeError: Event loop is closed, which usually means a
library kept a reference to a loop that asyncio.run() already closed.
""",
    "cooking/bread.md": """---
title: Sourdough bread
space: cooking
updated: 2023-02-10
---
# Sourdough

A sourdough starter is flour and water fermented by wild yeast and lactobacilli. Feed the starter
daily with equal weights of flour and water, and bake when it doubles within six hours.

Bake the loaf in a preheated Dutch oven at 250 °C for twenty minutes with the lid on, then
twenty-five minutes without it, until the crust is deep brown.
""",
    "travel/japan.txt": """Kyoto by train

The Shinkansen from Tokyo reaches Kyoto in about two hours and fifteen minutes. A Japan Rail Pass
covers the Hikari trains but not the fastest Nozomi services. Local JR lines reach Nara and Inari.
""",
    "garden/tomatoes.md": """# Tomatoes

Tomato plants need six to eight hours of sun, deep watering twice a week and a stake or cage.
Pinch the side shoots of indeterminate varieties so the plant puts its energy into the fruit.
""",
}


@dataclass
class IndexedCorpus:
    root: Path
    store: LanceDBStore
    embedder: OnnxEmbedder
    documents: dict[str, Document]
    chunks: dict[str, list[Chunk]]
    bodies: dict[str, str]

    def path(self, relative: str) -> Path:
        return self.root / relative


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    model_dir = models_dir() / "all-MiniLM-L6-v2"
    if not (model_dir / "model_int8.onnx").exists():
        pytest.skip(
            f"no embedding model at {model_dir}: set HINDSIGHT_MODELS_DIR or run `hindsight models prepare`"
        )
    return OnnxEmbedder(model_dir, threads=1)


def char_windows(text: str) -> list[tuple[int, int]]:
    """Overlapping windows that start and end on non-space characters, as the indexer's chunks do."""
    spans: list[tuple[int, int]] = []
    start = len(text) - len(text.lstrip())
    while start < len(text):
        end = min(start + WINDOW_CHARS, len(text))
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
        if start + WINDOW_CHARS >= len(text):
            break
        start += WINDOW_CHARS - OVERLAP_CHARS
        while start < len(text) and text[start].isspace():
            start += 1
    return spans


def build_document(root: Path, relative: str, raw: str) -> tuple[Document, list[Chunk], str]:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(raw, encoding="utf-8")
    metadata: dict[str, str] = {}
    body = raw
    match = FRONT_MATTER.match(raw) if path.suffix == ".md" else None
    if match:
        metadata = dict(line.split(": ", 1) for line in match.group(1).strip().splitlines())
        body = raw[match.end() :]
    kind = SourceKind.MARKDOWN if path.suffix == ".md" else SourceKind.TEXT
    document = Document(
        id=hashlib.sha256(str(path).encode()).hexdigest()[:16],
        source_uri=str(path),
        kind=kind,
        title=metadata.get("title", path.stem),
        content_hash=hashlib.sha256(raw.encode()).hexdigest(),
        metadata=metadata,
    )
    date = datetime.fromisoformat(metadata["updated"] + "T00:00:00+00:00") if "updated" in metadata else None
    chunks = [
        Chunk(
            id=f"{document.id}:{ordinal}",
            document_id=document.id,
            ordinal=ordinal,
            text=body[start:end],
            char_start=start,
            char_end=end,
            title=document.title,
            source_uri=document.source_uri,
            kind=kind,
            space=metadata.get("space"),
            document_date=date,
            body_start=len(raw) - len(body),
        )
        for ordinal, (start, end) in enumerate(char_windows(body))
    ]
    return document, chunks, body


def index_corpus(root: Path, store_dir: Path, embedder: OnnxEmbedder) -> IndexedCorpus:
    store = LanceDBStore(store_dir, embedder.dimension)
    corpus = IndexedCorpus(root, store, embedder, {}, {}, {})
    for relative, raw in CORPUS.items():
        document, chunks, body = build_document(root, relative, raw)
        vectors = embedder.embed_documents(["\n".join([c.title, c.text]) for c in chunks])
        store.replace_document(document, chunks, vectors)
        corpus.documents[relative] = document
        corpus.chunks[relative] = chunks
        corpus.bodies[relative] = body
    return corpus


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> IndexedCorpus:
    base = tmp_path_factory.mktemp("retriever-corpus")
    return index_corpus(base / "notes", base / "store", embedder)
