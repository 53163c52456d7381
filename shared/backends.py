"""Choose the backend behind each interface from the settings, once per process.

The pipeline asks for ``get_store()``, ``get_embedder()`` and ``get_llm()`` and never learns which
implementation it got: the embedded defaults locally, Weaviate and Ollama in compose.
"""

from __future__ import annotations

from functools import lru_cache

from shared.interfaces import LLM, Embedder, VectorStore
from shared.settings import get_settings


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    settings = get_settings()
    if settings.embedder == "ollama":
        from shared.ollama_embedder import OllamaEmbedder

        return OllamaEmbedder.from_settings(settings)
    from shared.embedding import OnnxEmbedder

    return OnnxEmbedder(settings.embedder_dir, settings.onnx_threads, settings.embed_batch_size)


@lru_cache(maxsize=1)
def get_store() -> VectorStore:
    settings = get_settings()
    if settings.store == "weaviate":
        from shared.stores.weaviate_store import WeaviateStore

        return WeaviateStore.from_settings(settings)
    from shared.stores.lancedb_store import LanceDBStore

    return LanceDBStore(settings.store_dir, get_embedder().dimension)


@lru_cache(maxsize=1)
def get_llm() -> LLM | None:
    """The configured chat model, or ``None`` for the extractive mode."""
    settings = get_settings()
    if settings.llm == "none":
        return None
    from shared.llms import create_llm

    return create_llm(settings)
