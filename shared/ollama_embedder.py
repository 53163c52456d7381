"""The production embedder: ``nomic-embed-text`` served by Ollama, with the model's task prefixes.

nomic-embed-text was trained with ``search_document:`` and ``search_query:`` prefixes and retrieves
noticeably worse without them, so documents and queries are prefixed here, not by callers. Requests
are batched, time out, and are retried with backoff when the server is down or answers 5xx; a 4xx
(e.g. the model is not pulled) fails at once with the server's reason and what to run. An all-zero or
non-finite row (real Ollama 0.5.7 answered one in 2 of 8 two-input calls right after loading a
model) is asked again like a server error, then refused (:class:`DegenerateVectorsError`).

Chunks are sized with the BERT ``bert-base-uncased`` word-piece tokenizer that nomic-embed-text
uses; the ONNX embedder's provisioned ``tokenizer.json`` (all-MiniLM-L6-v2) has the same vocabulary,
so no download is needed and no build-time package is imported at run time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import ollama
from tokenizers import Tokenizer

from shared.embedding import ModelMissingError
from shared.model_files import TOKENIZER_FILE
from shared.settings import EmbeddingSettings
from shared.vectors import DegenerateVectorsError, refuse_degenerate

DOCUMENT_PREFIX = "search_document: "
QUERY_PREFIX = "search_query: "
NOMIC_DIMENSION = 768


class EmbedderError(RuntimeError):
    """The embedding server failed, refused, or answered vectors of the wrong shape."""


def provisioned_tokenizer_path(embedder_dir: Path) -> Path:
    """``bert-base-uncased`` word pieces: the tokenizer of the embedder provisioned in ``embedder_dir``
    (same vocabulary)."""
    path = embedder_dir / TOKENIZER_FILE
    if not path.exists():
        raise ModelMissingError(f"tokenizer missing at {path}: run `hindsight models prepare`")
    return path


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)


class OllamaEmbedder:
    """:class:`shared.interfaces.Embedder` over Ollama's ``/api/embed``."""

    def __init__(
        self,
        client: Any,
        model: str,
        tokenizer_path: Path,
        dimension: int = NOMIC_DIMENSION,
        batch_size: int = 32,
        retries: int = 3,
        backoff_s: float = 0.5,
    ) -> None:
        self._client = client
        self._model = model
        self.name = f"ollama:{model}"
        self.dimension = dimension
        self._batch_size = batch_size
        self._retries = retries
        self._backoff_s = backoff_s
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    @classmethod
    def from_settings(
        cls, settings: EmbeddingSettings, ollama_url: str, embedder_dir: Path
    ) -> OllamaEmbedder:
        """The embedder of Ollama at ``ollama_url``, counting tokens with the provisioned tokenizer in
        ``embedder_dir``."""
        client = ollama.Client(host=ollama_url, timeout=settings.ollama_timeout_s)
        return cls(
            client,
            settings.ollama_embed_model,
            provisioned_tokenizer_path(embedder_dir),
            dimension=settings.ollama_embed_dimension,
            batch_size=settings.embed_batch_size,
            retries=settings.ollama_retries,
        )

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        batches = [
            self._embed([DOCUMENT_PREFIX + t for t in texts[start : start + self._batch_size]])
            for start in range(0, len(texts), self._batch_size)
        ]
        return np.vstack(batches)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([QUERY_PREFIX + text])[0]

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return [span for span in encoding.offsets if span[1] > span[0]]

    def _embed(self, inputs: list[str]) -> np.ndarray:
        """One ``/api/embed`` call, retried with exponential backoff on timeouts, refusals and 5xx."""
        for attempt in range(self._retries + 1):
            try:
                response = self._client.embed(model=self._model, input=inputs, truncate=True)
                return self._checked(response.embeddings, len(inputs))
            except ollama.ResponseError as exc:
                if exc.status_code == 404:
                    raise EmbedderError(
                        f"Ollama has no model {self._model} ({exc.error}): run `ollama pull {self._model}`"
                    ) from exc
                if 400 <= exc.status_code < 500 or attempt == self._retries:
                    raise EmbedderError(f"Ollama refused to embed with {self._model}: {exc}") from exc
            except (httpx.TransportError, ConnectionError) as exc:
                if attempt == self._retries:
                    raise EmbedderError(f"Ollama unreachable after {attempt + 1} attempts: {exc}") from exc
            except DegenerateVectorsError:
                if attempt == self._retries:
                    raise
            time.sleep(self._backoff_s * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _checked(self, embeddings: Any, expected: int) -> np.ndarray:
        vectors = np.asarray(embeddings, dtype=np.float32)
        if vectors.shape != (expected, self.dimension):
            raise EmbedderError(
                f"Ollama returned vectors of shape {vectors.shape}, expected ({expected}, {self.dimension})"
            )
        return unit_rows(refuse_degenerate(vectors, f"Ollama's {self._model}"))
