"""The three seams between the pipeline and its backends.

The pipeline code depends only on these protocols; :mod:`shared.backends` picks the embedded or
the production implementation from the settings.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict

from shared.contracts import Chunk, Document, SearchFilters


class Hit(BaseModel):
    """A chunk and the score one search leg gave it (higher is better)."""

    chunk: Chunk
    score: float


class ManifestEntry(BaseModel):
    """One indexed file as the store remembers it (frozen: a store may hand the same entries out again)."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    source_uri: str
    content_hash: str
    chunk_count: int


class VectorStoreError(RuntimeError):
    """The store refused a write or a query (a vector of the wrong length, a server error); the
    message says what was refused and why."""


class VectorStore(Protocol):
    """Chunks with vectors, full-text search and the per-document manifest, kept together.

    Every store refuses vectors of another length than its own and degenerate vectors
    (``shared.vectors.refuse_degenerate``), on write and on query, with :class:`VectorStoreError` or
    ``DegenerateVectorsError``; no backend's own exception escapes.
    """

    def replace_documents(self, documents: list[Document], chunks: list[Chunk], vectors: np.ndarray) -> None:
        """In one write, make each document's chunks in ``chunks`` (matched by ``document_id``; none
        for a document without any) its only chunks, and record every document in the manifest.
        ``vectors`` holds one row per chunk, in order. Replacing is by document id, so writing the
        same documents again leaves the store as one write would. Each document's centroid
        (:meth:`document_centroids`) is computed here, once, and stored with its manifest row."""

    def replace_document(self, document: Document, chunks: list[Chunk], vectors: np.ndarray) -> None:
        """:meth:`replace_documents` of one document."""

    def delete_document(self, document_id: str) -> None:
        """Remove the document's chunks and its manifest row."""

    def manifest(self, root: str | None = None) -> dict[str, ManifestEntry]:
        """Manifest rows keyed by source uri, optionally only those under ``root``."""

    def manifest_version(self) -> int | None:
        """A number that changes with every write to the manifest, where the store has a cheap one
        (a reader may keep what :meth:`manifest` gave it while this number stays); ``None`` where
        it has none. A store emptied by :meth:`clear` in another process may come back to a number
        seen before, so a reader keeps only what it can check again (the exact leg checks every
        match against its chunk's text)."""

    def dense_search(
        self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None
    ) -> list[Hit]: ...

    def keyword_search(self, query: str, limit: int, filters: SearchFilters | None = None) -> list[Hit]: ...

    def keyword_count(self, query: str, limit: int) -> int:
        """How many chunks :meth:`keyword_search` finds for ``query``, counted up to ``limit``, without
        reading them (the planner's word statistics ask this of every word of a question)."""

    def document_chunks(self, document_id: str, ordinals: list[int]) -> list[Chunk]:
        """The document's chunks with these ordinals (for neighbour expansion)."""

    def documents_chunks(self, document_ids: list[str]) -> dict[str, list[Chunk]]:
        """Every chunk of each listed document, in ordinal order, read in one query (the exact leg's
        files). A document without chunks is left out."""

    def document_centroids(self, document_ids: list[str]) -> dict[str, np.ndarray]:
        """Each listed document's centroid: the mean of its chunks' stored vectors, scaled to unit
        length, as computed when the document was written (read, never recomputed from the chunks).
        A document without chunks (or whose vectors cancel out) is left out."""

    def count_chunks(self) -> int: ...

    def refresh_indexes(self) -> None:
        """Bring the search indexes up to date with every write so far (at the end of an index job)."""

    def clear(self) -> None:
        """Delete every chunk and manifest row (``hindsight reset``); the store stays usable, empty."""


class Embedder(Protocol):
    """Text to unit-length vectors; documents and queries may be embedded differently."""

    name: str
    dimension: int

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of the model's tokens in ``text``, so chunks are sized in its tokens."""


class TokenSpans(Protocol):
    """Character spans of the tokens of a text, for chunking by the embedding model's tokens."""

    def __call__(self, text: str) -> list[tuple[int, int]]: ...


ModelT = TypeVar("ModelT", bound=BaseModel)


class ChatMessage(BaseModel):
    role: str
    content: str


class LLMError(RuntimeError):
    """The model failed, timed out or answered something that does not fit the schema."""


class LLM(Protocol):
    """A chat model that can be held to a JSON schema."""

    name: str

    def generate_json(
        self, messages: list[ChatMessage], schema: type[ModelT], max_tokens: int = 512
    ) -> ModelT:
        """Generate JSON matching ``schema`` and validate it; raise :class:`LLMError` otherwise."""

    def generate_text(self, messages: list[ChatMessage], max_tokens: int = 512) -> str: ...
