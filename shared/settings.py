"""All of Hindsight's configuration: one class, environment variables prefixed ``HINDSIGHT_``.

Defaults are the embedded local stack (LanceDB, ONNX embeddings, no LLM); the compose file
switches the backends to Weaviate and Ollama through the same variables. Rules between settings are
validators, so a process refuses to start with settings that contradict each other, and says which.
"""

from __future__ import annotations

import os
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, computed_field, field_validator, model_validator
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
    llm: Literal["none", "llama-cpp", "ollama", "custom"] = "none"
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
    chunk_tokens: int = Field(default=200, ge=1)
    # Tokens a chunk repeats from the end of the one before; less than a chunk.
    chunk_overlap: int = Field(default=40, ge=0)
    # Texts per embedder session run at most (runs are capped by tokens too: shared.embedding.RunPlan).
    embed_batch_size: int = Field(default=32, ge=1)
    max_file_bytes: int = 20 * 1024 * 1024
    # Per document: the text a file may extract to (a small PDF can expand to tens of millions of
    # characters) and the chunks it may make; a file over either is skipped with the reason.
    max_document_chars: int = Field(default=5_000_000, ge=1)
    # Seconds a PDF's text extraction may take before the file is refused (while it runs, not after).
    pdf_time_limit_s: float = Field(default=30.0, gt=0)
    max_document_chunks: int = Field(default=10_000, ge=1)
    # Folders more than this many levels below a root are not walked (and their documents kept).
    max_folder_depth: int = Field(default=64, ge=1)
    # One index task loads this many files (at most ``index_batch_bytes`` of them on disk, but always
    # at least one file) and writes them to the store in one write.
    index_batch_files: int = Field(default=32, ge=1)
    index_batch_bytes: int = Field(default=16 * 1024 * 1024, ge=1)
    # Tokens (estimated) of the chunks the indexer hands the embedder per call, filled across files and
    # batches; and how many files a thread loads and chunks ahead of the embedder.
    index_embed_tokens: int = Field(default=8192, ge=1)
    index_prepare_ahead: int = Field(default=64, ge=1)
    index_max_retries: int = 3
    index_retry_backoff_s: float = 2.0
    watch_debounce_ms: int = 1_000
    # Folders one watcher watches at most (one inotify watch each; the machine's user has 8,192 to
    # 65,536 in all): beyond it, changes are picked up by the next scan.
    watch_max_folders: int = Field(default=10_000, ge=1)
    ollama_timeout_s: float = 60.0
    ollama_embed_dimension: int = 768
    ollama_retries: int = 3

    # Retrieval: candidates per leg (the pool), of which the fused best go to the reranker (at most
    # the pool). The exact leg reads each matching file's chunks back with one store query per file,
    # so it stops at ``pool_exact`` files whatever the pool (docs/decisions/retrieval.md).
    pool_precise: int = Field(default=100, ge=1)
    pool_exhaustive: int = Field(default=80, ge=1)
    pool_exact: int = Field(default=50, ge=1)
    rerank_inputs_precise: int = Field(default=35, ge=1)
    rerank_inputs_exhaustive: int = Field(default=60, ge=1)
    rrf_k: int = 60
    hyde_mode: HydeMode = HydeMode.SUPPLEMENT
    hyde_threshold_score: float = 0.35
    hyde_threshold_count: int = 3
    # Supplement mode skips HyDE when the LLM's name contains one of these (its passages measured to
    # lower nDCG@10: bench/README.md); fusion mode always runs it.
    hyde_weak_writers: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["SmolLM2"])
    # Fusion and the dense leg's lead bonus chosen across four sets: docs/decisions/retrieval.md.
    fusion_method: Literal["rrf", "alpha"] = "alpha"
    fusion_alpha: float = Field(default=0.8, ge=0.0, le=1.0)
    # Added to the dense score of each document's lead chunk before fusion (0: off).
    dense_lead_bonus: float = Field(default=0.25, ge=0.0, le=1.0)
    # A dense hit's share of its document's centroid (the mean of its chunks' vectors) against the
    # chunk's own score (0: the chunk alone).
    dense_centroid_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    # The α-blend falls back to dense alone when the first dense leg's and BM25's first
    # ``fusion_guard_top`` documents share fewer than ``fusion_guard_min_shared`` (0: never).
    fusion_guard_top: int = Field(default=10, ge=1)
    fusion_guard_min_shared: int = Field(default=0, ge=0)
    rrf_weight_dense: float = 1.0
    rrf_weight_hyde: float = 1.0
    rrf_weight_bm25: float = 0.35  # docs/decisions/retrieval.md
    rrf_weight_exact: float = 0.1
    planner_timeout_s: float = 20.0
    planner_max_tokens: int = 320
    exact_max_keywords: int = 6
    rg_path: Path | None = None
    k_adjacent: int = Field(default=0, ge=0, le=3)
    search_timeout_s: float = 60.0

    # Reranking
    rerank_batch_size: int = Field(default=64, ge=1)
    # The cut on the cross-encoder's logit: None takes the provisioned model's own calibrated cut
    # (its provenance's ``keep_logit``), else -5.0, the ms-marco models' scale.
    rerank_threshold: float | None = None
    # The top logit under which no passage answers the question ("nothing found"): None takes the
    # model's calibrated ``answerable_logit``; a model without one never refuses.
    rerank_answerable_logit: float | None = None
    rerank_fallback_k: int = 20
    # int8 exists only once provisioning verified it against fp32; ``auto`` serves whichever verified
    # precision provisioning measured fastest on this machine.
    reranker_precision: Literal["auto", "int8", "fp32"] = "auto"
    # How long the micro-batcher holds a partial batch for other questions' pairs.
    rerank_max_wait_ms: float = 10.0
    # Redis redelivers a message a killed worker had not acknowledged after this many seconds: long
    # for scrape and index, whose tasks can run long and must not run twice; short for the question
    # stages (retrieve, rerank, map, reduce) a user waits on.
    broker_visibility_timeout_s: int = 3600
    question_visibility_timeout_s: int = 300
    # Every task's time limits: past the soft one the task fails with a clear reason (a question's
    # stream ends failed), past the hard one its process is killed (prefork pools; the reranker's
    # thread pool enforces neither). Each hard limit stays below its visibility timeout, so no task
    # still running is handed to a second worker: question stages below the question one, index and
    # scrape tasks ("jobs") below the broker's.
    question_soft_time_limit_s: int = Field(default=240, ge=1)
    question_time_limit_s: int = Field(default=280, ge=1)
    job_soft_time_limit_s: int = Field(default=3300, ge=1)
    job_time_limit_s: int = Field(default=3500, ge=1)
    # Seconds between question workers' sweeps for messages whose visibility timeout has passed.
    question_restore_interval_s: int = 5
    # A map stage with no progress for this long lost a message (a worker killed holding one it had
    # not yet recorded as unacknowledged): the reduce worker sends the missing batches again. It
    # exceeds the visibility timeout plus the longest a map batch may run (its hard time limit), or a
    # batch waiting for redelivery would be sent twice.
    question_stall_s: int = 900
    # Seconds between the reduce worker's sweeps for stalled map stages.
    question_stall_check_s: float = 10.0
    # Seconds between the reranker's status heartbeats in Redis (read by /healthz).
    reranker_heartbeat_s: float = 15.0

    # Synthesis
    map_batch_size: int = Field(default=10, ge=1)
    # llm=custom builds the chat model from "module:callable" (called with the settings): the seam a
    # scripted test model uses to reach real worker processes.
    llm_factory: str | None = None
    llm_context_tokens: int = 4096
    llm_seed: int = 0
    # ggml's extra CPU buffers (AMX, repacked weights) segfault where AMX is advertised but not granted.
    llm_extra_buffers: bool = False
    map_passage_chars: int = 1200
    map_max_facts: int = 6
    narrator_max_facts: int = 8
    narrator_token_budget: int = 1200
    compress_max_calls: int = 3
    verify_max_claims: int = 8
    self_correct: bool = True

    # Gateway
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8000
    # Seconds a connection has to send a request's whole head (request line and headers).
    gateway_head_timeout_s: float = Field(default=10.0, gt=0)
    gateway_url: str = "http://127.0.0.1:8000"
    event_ttl_s: int = 86_400
    # ``keys`` demands an API key on /v1; ``open`` is honoured only on a loopback address unless
    # ``gateway_allow_open_remote`` says, explicitly, that an open gateway on the network is intended.
    gateway_auth: Literal["keys", "open"] = "keys"
    gateway_allow_open_remote: bool = False
    api_keys_file: Path | None = None
    api_key: str | None = None
    max_request_bytes: int = 65_536
    # Host names the gateway answers to (comma-separated), besides loopback names, the bind address
    # and the host of GATEWAY_URL; ``*`` answers every name. Any other Host header (DNS rebinding)
    # gets 400.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Event streams one key may hold open on one gateway at once.
    max_streams_per_key: int = Field(default=8, ge=1)
    # Seconds without a new event after which an open stream ends with a failed event; unset: the
    # longest the work's next step may take (QUESTION_STALL_S + QUESTION_TIME_LIMIT_S for questions,
    # JOB_TIME_LIMIT_S for index jobs).
    stream_idle_s: float | None = Field(default=None, gt=0)
    # Seconds GET /v1/health reuses its last reading (a broadcast to the workers) for every caller.
    health_cache_s: float = 2.0
    max_question_chars: int = 2_000
    rate_limit_per_minute: int = 60
    # Reads (status polls, answers, event streams) count against a budget of their own.
    read_rate_limit_per_minute: int = 600
    backpressure_max_queued: int = 200
    backpressure_retry_after_s: int = 5
    # A question (or a scrape) is refused (503) while a stage's queue has no live worker; false where
    # workers are started on demand by queue depth, so a queued task is what brings its worker up.
    refuse_without_workers: bool = True
    metrics_poll_s: float = 1.0

    # Scraper (Perplexity export). Delays are seconds; tests set them to ~0.
    perplexity_base_url: str = "https://www.perplexity.ai"
    perplexity_state: Path | None = None
    export_dir: Path | None = None
    chromium_path: Path | None = None
    # Headful by default: Cloudflare challenges headless Chromium. Without a DISPLAY the scraper starts
    # a virtual one (Xvfb); ``hindsight scrape --headless`` or this setting skips the window.
    scrape_headless: bool = False
    # How long a Cloudflare challenge page is given to clear by itself before the run stops.
    scrape_challenge_wait_s: float = 20.0
    # The scheduled sync's period (seconds or ISO 8601 such as PT6H); 0 turns it off.
    scrape_every: timedelta = timedelta(0)
    scrape_list_page_size: int = 50
    scrape_page_delay_s: float = 0.8
    scrape_page_jitter_s: float = 0.7
    scrape_thread_delay_s: float = 1.0
    scrape_thread_jitter_s: float = 2.0
    scrape_max_attempts: int = 4
    scrape_backoff_base_s: float = 2.0
    scrape_backoff_max_s: float = 60.0
    scrape_timeout_s: float = 30.0
    scrape_login_timeout_s: float = 300.0

    @field_validator("roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        """``HINDSIGHT_ROOTS`` is a ``:``-separated list of folders, like ``PATH``."""
        if isinstance(value, str):
            return [part for part in value.split(os.pathsep) if part]
        return value

    @field_validator("allowed_hosts", "hyde_weak_writers", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        """``HINDSIGHT_ALLOWED_HOSTS`` and ``HINDSIGHT_HYDE_WEAK_WRITERS`` are comma-separated lists."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _rules_between_settings(self) -> Settings:
        """The rules the comments above state, enforced; the message names the variables to change."""
        broken = [rule for rule, holds in self.rules().items() if not holds]
        if broken:
            raise ValueError("inconsistent settings: " + "; ".join(broken))
        return self

    def rules(self) -> dict[str, bool]:
        """Each rule between settings (as the message a broken one gives) and whether it holds."""
        return {
            f"CHUNK_OVERLAP ({self.chunk_overlap}) must be less than CHUNK_TOKENS ({self.chunk_tokens})": (
                self.chunk_overlap < self.chunk_tokens
            ),
            f"RERANK_INPUTS_PRECISE ({self.rerank_inputs_precise}) must not exceed POOL_PRECISE "
            f"({self.pool_precise})": self.rerank_inputs_precise <= self.pool_precise,
            f"RERANK_INPUTS_EXHAUSTIVE ({self.rerank_inputs_exhaustive}) must not exceed POOL_EXHAUSTIVE "
            f"({self.pool_exhaustive})": self.rerank_inputs_exhaustive <= self.pool_exhaustive,
            f"QUESTION_SOFT_TIME_LIMIT_S ({self.question_soft_time_limit_s}) must be less than "
            f"QUESTION_TIME_LIMIT_S ({self.question_time_limit_s})": (
                self.question_soft_time_limit_s < self.question_time_limit_s
            ),
            f"QUESTION_TIME_LIMIT_S ({self.question_time_limit_s}) must be less than "
            f"QUESTION_VISIBILITY_TIMEOUT_S ({self.question_visibility_timeout_s})": (
                self.question_time_limit_s < self.question_visibility_timeout_s
            ),
            f"JOB_SOFT_TIME_LIMIT_S ({self.job_soft_time_limit_s}) must be less than JOB_TIME_LIMIT_S "
            f"({self.job_time_limit_s})": self.job_soft_time_limit_s < self.job_time_limit_s,
            f"JOB_TIME_LIMIT_S ({self.job_time_limit_s}) must be less than BROKER_VISIBILITY_TIMEOUT_S "
            f"({self.broker_visibility_timeout_s})": self.job_time_limit_s < self.broker_visibility_timeout_s,
            f"QUESTION_STALL_S ({self.question_stall_s}) must exceed QUESTION_VISIBILITY_TIMEOUT_S plus "
            f"QUESTION_TIME_LIMIT_S ({self.question_visibility_timeout_s} + {self.question_time_limit_s})": (
                self.question_stall_s > self.question_visibility_timeout_s + self.question_time_limit_s
            ),
        }

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
    def perplexity_state_path(self) -> Path:
        return (self.perplexity_state or self.data_dir / "perplexity-state.json").resolve()

    @property
    def export_root(self) -> Path:
        return (self.export_dir or self.data_dir / "exports").resolve()

    @property
    def run_dir(self) -> Path:
        return (self.data_dir / "run").resolve()

    @property
    def keys_file(self) -> Path:
        """The hashed API keys the gateway accepts."""
        return (self.api_keys_file or self.data_dir / "api_keys.json").resolve()

    @property
    def roots_file(self) -> Path:
        """The folders ``hindsight index`` made roots, one a line (mode 0600)."""
        return (self.data_dir / "roots.txt").resolve()

    @property
    def redis_password_file(self) -> Path:
        """The password of the local stack's Redis user, created by ``hindsight up`` (mode 0600)."""
        return (self.data_dir / "redis.password").resolve()

    @property
    def cli_key_file(self) -> Path:
        """The local CLI's own key, created by ``hindsight up`` (mode 0600)."""
        return (self.data_dir / "cli.key").resolve()

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
