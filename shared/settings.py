"""All of Hindsight's configuration: one class, environment variables prefixed ``HINDSIGHT_``.

Defaults are the embedded local stack (LanceDB, ONNX embeddings, no LLM); the compose file
switches the backends to Weaviate and Ollama through the same variables.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, computed_field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from shared.contracts import HydeMode, Strategy


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_", extra="ignore")

    # Infrastructure
    redis_url: str = "redis://127.0.0.1:6380/0"
    data_dir: Path = Path(".hindsight")
    models_dir: Path | None = None

    # Backends
    store: Literal["lancedb", "weaviate"] = "lancedb"
    embedder: Literal["onnx", "ollama"] = "onnx"
    llm: Literal["none", "llama-cpp", "ollama"] = "none"
    weaviate_url: str = "http://127.0.0.1:8080"
    weaviate_grpc_port: int = 50051
    weaviate_collection: str = "HindsightChunk"
    ollama_url: str = "http://127.0.0.1:11434"
    ollama_model: str = "llama3.2"
    ollama_embed_model: str = "nomic-embed-text"
    llama_model_path: Path | None = None
    llm_threads: int = 0
    llm_timeout_s: float = 120.0

    # Models
    embedder_model_dir: Path | None = None
    reranker_model_dir: Path | None = None
    onnx_threads: int = 0

    # Indexing
    roots: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    chunk_tokens: int = 200
    chunk_overlap: int = 40
    embed_batch_size: int = 32

    # Retrieval
    pool_precise: int = 50
    pool_exhaustive: int = 80
    rerank_inputs_precise: int = 35
    rerank_inputs_exhaustive: int = 60
    rrf_k: int = 60
    hyde_mode: HydeMode = HydeMode.SUPPLEMENT
    hyde_threshold_score: float = 0.35
    hyde_threshold_count: int = 3

    # Retriever (issue 4)
    fusion_method: Literal["rrf", "alpha"] = "rrf"
    fusion_alpha: float = Field(default=0.75, ge=0.0, le=1.0)
    rrf_weight_dense: float = 1.0
    rrf_weight_hyde: float = 1.0
    rrf_weight_bm25: float = 0.35  # equal weights fuse below dense alone (shared/eval/README.md)
    rrf_weight_exact: float = 0.1
    planner_timeout_s: float = 20.0
    planner_max_tokens: int = 320
    exact_max_keywords: int = 6
    rg_path: Path | None = None
    k_adjacent: int = Field(default=0, ge=0, le=3)
    search_timeout_s: float = 60.0

    # Reranking and synthesis
    rerank_batch_size: int = 64
    rerank_threshold: float = -5.0
    rerank_fallback_k: int = 20
    map_batch_size: int = 10

    # Gateway
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8000
    gateway_url: str = "http://127.0.0.1:8000"
    event_ttl_s: int = 86_400
    answer_timeout_s: float = 600.0

    @field_validator("roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        """``HINDSIGHT_ROOTS`` is a ``:``-separated list of folders, like ``PATH``."""
        if isinstance(value, str):
            return [part for part in value.split(os.pathsep) if part]
        return value

    @computed_field  # type: ignore[prop-decorator]
    @property
    def resolved_models_dir(self) -> Path:
        return (self.models_dir or self.data_dir / "models").resolve()

    @property
    def embedder_dir(self) -> Path:
        return (self.embedder_model_dir or self.resolved_models_dir / "all-MiniLM-L6-v2").resolve()

    @property
    def reranker_dir(self) -> Path:
        return (self.reranker_model_dir or self.resolved_models_dir / "ms-marco-MiniLM-L-6-v2").resolve()

    @property
    def store_dir(self) -> Path:
        return (self.data_dir / "store").resolve()

    @property
    def run_dir(self) -> Path:
        return (self.data_dir / "run").resolve()

    def pool_size(self, strategy: Strategy) -> int:
        return self.pool_precise if strategy is Strategy.PRECISE else self.pool_exhaustive

    def rerank_inputs(self, strategy: Strategy) -> int:
        if strategy is Strategy.PRECISE:
            return self.rerank_inputs_precise
        return self.rerank_inputs_exhaustive


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
