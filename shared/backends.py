"""Choose the backend behind each interface from the settings.

The pipeline asks for ``get_store()``, ``get_embedder()`` and ``get_llm()`` (built once per process
from the process's settings) and never learns which implementation it got: the embedded defaults
locally, Weaviate and Ollama in compose. ``create_*`` build one from any settings (the in-process
pipeline of ``pipeline.question``).
"""

from __future__ import annotations

from functools import lru_cache

from shared.interfaces import LLM, Embedder, VectorStore
from shared.settings import Settings, get_settings


def create_embedder(settings: Settings) -> Embedder:
    if settings.embedding.embedder == "ollama":
        from shared.ollama_embedder import OllamaEmbedder

        return OllamaEmbedder.from_settings(settings.embedding, settings.ollama_url, settings.embedder_dir)
    from shared.embedding import OnnxEmbedder

    return OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )


def create_store(settings: Settings, embedder: Embedder) -> VectorStore:
    return open_store(settings, embedder.dimension)


def open_store(settings: Settings, dimension: int) -> VectorStore:
    """The configured store, for vectors of ``dimension`` values."""
    if settings.storage.store == "weaviate":
        from shared.stores.weaviate_store import WeaviateStore

        return WeaviateStore.from_settings(settings.storage)
    from shared.stores.lancedb_store import LanceDBStore

    return LanceDBStore(settings.store_dir, dimension)


def clear_store(settings: Settings) -> None:
    """Empty the configured store (``hindsight reset``) through its own :meth:`~VectorStore.clear`,
    without loading an embedding model: the dimension is the configured embedder's."""
    if settings.embedding.embedder == "ollama":
        dimension = settings.embedding.ollama_embed_dimension
    else:
        from shared.embedding import OnnxEmbedder

        dimension = OnnxEmbedder.dimension
    open_store(settings, dimension).clear()


def create_llm(settings: Settings) -> LLM | None:
    """The configured chat model, or ``None`` for the extractive mode."""
    if settings.generation.llm == "none":
        return None
    from shared.llms import create_llm as create_chat_model

    return create_chat_model(settings.generation, settings.ollama_url)


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    return create_embedder(get_settings())


@lru_cache(maxsize=1)
def get_store() -> VectorStore:
    return create_store(get_settings(), get_embedder())


@lru_cache(maxsize=1)
def get_llm() -> LLM | None:
    """The process's chat model, or ``None`` for the extractive mode."""
    return create_llm(get_settings())
