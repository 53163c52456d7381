"""All of Hindsight's configuration, grouped by the service that reads it; environment variables
prefixed ``HINDSIGHT_``.

Each group (:class:`StorageSettings`, :class:`RetrievalSettings`…) is read from the environment on its
own, under the same flat names as ever (``HINDSIGHT_POOL_PRECISE``); :class:`Settings` holds the groups
and the few facts every service shares (Redis, the data and model folders, the Ollama server), and a
function receives only the group it reads. ``docs/settings.md`` is the table of every variable,
generated from the descriptions below by ``python -m shared.settings_table``.

Defaults are the embedded local stack (LanceDB, ONNX embeddings, no LLM); the compose file switches
the backends to Weaviate and Ollama through the same variables. Rules between settings are
validators of the group whose fields they relate, so a process refuses to start with settings that
contradict each other, and says which variables to change.
"""

from __future__ import annotations

import os
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, ValidationError, computed_field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from shared.contracts import HydeMode, Strategy


def _split_paths(value: object) -> object:
    """A ``:``-separated list of folders, like ``PATH``."""
    if isinstance(value, str):
        return [part for part in value.split(os.pathsep) if part]
    return value


def _split_commas(value: object) -> object:
    """A comma-separated list, blanks dropped."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class SettingsGroup(BaseSettings):
    """One service's settings, read from ``HINDSIGHT_<FIELD>``; its :meth:`rules` are checked on build."""

    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_", extra="ignore")

    title: ClassVar[str] = ""

    @model_validator(mode="after")
    def _rules_between_settings(self) -> Self:
        """The group's rules, enforced; the message names the variables to change."""
        broken = [rule for rule, holds in self.rules().items() if not holds]
        if broken:
            raise ValueError("inconsistent settings: " + "; ".join(broken))
        return self

    def rules(self) -> dict[str, bool]:
        """Each rule between this group's settings (as the message a broken one gives) and whether it
        holds."""
        return {}

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (field names of this group), validated and its rules checked.

        Raises ``ValueError`` naming any field the group does not have."""
        unknown = sorted(set(changes) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"{type(self).__name__} has no setting {', '.join(unknown)}")
        return type(self)(**{**self._values(), **changes})

    def _values(self) -> dict[str, Any]:
        """Every field's current value, as given to the constructor."""
        return {name: getattr(self, name) for name in type(self).model_fields}


class StorageSettings(SettingsGroup):
    """The vector store every service reads and the indexer writes."""

    title: ClassVar[str] = "Storage"

    store: Literal["lancedb", "weaviate"] = Field(
        default="lancedb",
        description="The vector store: embedded LanceDB under the data folder, or a Weaviate server.",
    )
    weaviate_url: str = Field(
        default="http://127.0.0.1:8080", description="The Weaviate server's HTTP address."
    )
    weaviate_grpc_port: int = Field(default=50051, description="The Weaviate server's gRPC port (same host).")
    weaviate_collection: str = Field(
        default="HindsightChunk", description="The Weaviate collection that holds the chunks."
    )


class EmbeddingSettings(SettingsGroup):
    """The embedder: the indexer embeds chunks, the retriever embeds questions."""

    title: ClassVar[str] = "Embedding"

    embedder: Literal["onnx", "ollama"] = Field(
        default="onnx",
        description="The embedder: the provisioned ONNX model in process, or Ollama's embedding API.",
    )
    embedder_model_dir: Path | None = Field(
        default=None,
        description="The ONNX embedder's folder; unset: `all-MiniLM-L6-v2` under the models folder.",
    )
    onnx_threads: int = Field(
        default=0,
        description="Threads of each ONNX session, the embedder's and the reranker's (0: the runtime's "
        "choice).",
    )
    embed_batch_size: int = Field(
        default=32,
        ge=1,
        description="Texts per embedder session run at most (runs are capped by tokens too: "
        "shared.embedding.RunPlan).",
    )
    ollama_embed_model: str = Field(default="nomic-embed-text", description="The Ollama embedding model.")
    ollama_embed_dimension: int = Field(
        default=768, description="The Ollama embedding model's vector length (the store's schema uses it)."
    )
    ollama_timeout_s: float = Field(default=60.0, description="Seconds an Ollama embedding call may take.")
    ollama_retries: int = Field(
        default=3, description="Attempts at an Ollama embedding call before it fails."
    )


class GenerationSettings(SettingsGroup):
    """The chat model (LLM) the planner, HyDE and the synthesizer call."""

    title: ClassVar[str] = "Generation (LLM)"

    llm: Literal["none", "llama-cpp", "ollama", "custom"] = Field(
        default="none",
        description="The chat model: none (extractive answers), llama.cpp in process, Ollama, or custom "
        "(LLM_FACTORY).",
    )
    ollama_model: str = Field(default="llama3.2", description="The Ollama chat model.")
    llama_model_path: Path | None = Field(default=None, description="The GGUF file llama.cpp loads.")
    llm_threads: int = Field(default=0, description="llama.cpp's CPU threads (0: its own choice).")
    llm_timeout_s: float = Field(default=120.0, description="Seconds one chat call may take.")
    llm_factory: str | None = Field(
        default=None,
        description='With LLM=custom, the chat model is built from "module:callable" (called with this '
        "group): the seam a scripted test model uses to reach real worker processes.",
    )
    llm_context_tokens: int = Field(default=4096, description="llama.cpp's context window in tokens.")
    llm_seed: int = Field(default=0, description="The sampling seed, so answers repeat.")
    llm_extra_buffers: bool = Field(
        default=False,
        description="ggml's extra CPU buffers (AMX, repacked weights); off: they segfault where AMX is "
        "advertised but not granted.",
    )


class IndexingSettings(SettingsGroup):
    """What the indexer walks, how it chunks, and its caps, batches and watcher."""

    title: ClassVar[str] = "Indexing"

    roots: Annotated[list[Path], NoDecode] = Field(
        default_factory=list, description="The folders indexed, `:`-separated like PATH."
    )
    chunk_tokens: int = Field(default=200, ge=1, description="Tokens per chunk.")
    chunk_overlap: int = Field(
        default=40,
        ge=0,
        description="Tokens a chunk repeats from the end of the one before; less than a chunk.",
    )
    max_file_bytes: int = Field(default=20 * 1024 * 1024, description="Files larger than this are skipped.")
    max_document_chars: int = Field(
        default=5_000_000,
        ge=1,
        description="The text a file may extract to (a small PDF can expand to tens of millions of "
        "characters); a file over it is skipped with the reason.",
    )
    pdf_time_limit_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a PDF's text extraction may take before the file is refused (while it runs, "
        "not after).",
    )
    max_document_chunks: int = Field(
        default=10_000,
        ge=1,
        description="The chunks one document may make; a file over it is skipped with the reason.",
    )
    max_folder_depth: int = Field(
        default=64,
        ge=1,
        description="Folders more than this many levels below a root are not walked (and their documents "
        "kept).",
    )
    index_batch_files: int = Field(
        default=32,
        ge=1,
        description="Files one index task loads (at most INDEX_BATCH_BYTES of them on disk, but always at "
        "least one file) and writes to the store in one write.",
    )
    index_batch_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1, description="Bytes on disk of the files one index task loads at most."
    )
    index_embed_tokens: int = Field(
        default=8192,
        ge=1,
        description="Tokens (estimated) of the chunks the indexer hands the embedder per call, filled "
        "across files and batches.",
    )
    index_prepare_ahead: int = Field(
        default=64, ge=1, description="Files a thread loads and chunks ahead of the embedder."
    )
    index_max_retries: int = Field(
        default=3,
        description="Retries of an index batch whose store write failed; the last indexes its files one by "
        "one.",
    )
    index_retry_backoff_s: float = Field(
        default=2.0, description="Seconds before an index batch's first retry, doubled each retry."
    )
    watch_debounce_ms: int = Field(
        default=1_000, description="Milliseconds the watcher waits for a burst of changes to settle."
    )
    watch_max_folders: int = Field(
        default=10_000,
        ge=1,
        description="Folders one watcher watches at most (one inotify watch each; the machine's user has "
        "8,192 to 65,536 in all): beyond it, changes are picked up by the next scan.",
    )

    @field_validator("roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        """``HINDSIGHT_ROOTS`` is a ``:``-separated list of folders, like ``PATH``."""
        return _split_paths(value)

    def rules(self) -> dict[str, bool]:
        """A chunk's overlap is shorter than the chunk."""
        return {
            f"CHUNK_OVERLAP ({self.chunk_overlap}) must be less than CHUNK_TOKENS ({self.chunk_tokens})": (
                self.chunk_overlap < self.chunk_tokens
            ),
        }


class RetrievalSettings(SettingsGroup):
    """The retriever's legs, fusion, HyDE and planner (docs/decisions/retrieval.md)."""

    title: ClassVar[str] = "Retrieval"

    pool_precise: int = Field(
        default=100, ge=1, description="Candidates per leg (the pool) for a precise question."
    )
    pool_exhaustive: int = Field(
        default=80, ge=1, description="Candidates per leg for an exhaustive question."
    )
    pool_exact: int = Field(
        default=50,
        ge=1,
        description="Files the exact leg reads back at most (one store query per matching file), whatever "
        "the pool.",
    )
    rerank_inputs_precise: int = Field(
        default=35,
        ge=1,
        description="The fused best a precise question sends to the reranker (at most the pool).",
    )
    rerank_inputs_exhaustive: int = Field(
        default=60,
        ge=1,
        description="The fused best an exhaustive question sends to the reranker (at most the pool).",
    )
    rrf_k: int = Field(default=60, description="Reciprocal rank fusion's k.")
    hyde_mode: HydeMode = Field(
        default=HydeMode.SUPPLEMENT,
        description="When a hypothetical passage (HyDE) is written and searched: supplement (when the first "
        "dense leg looks weak), fusion (always) or off.",
    )
    hyde_threshold_score: float = Field(
        default=0.35, description="Supplement mode: the dense score from which a hit counts as strong."
    )
    hyde_threshold_count: int = Field(
        default=3,
        description="Supplement mode: HyDE is skipped when at least this many of the first dense leg's hits "
        "are strong.",
    )
    hyde_weak_writers: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["SmolLM2"],
        description="Comma-separated: supplement mode skips HyDE when the LLM's name contains one of these "
        "(its passages measured to lower nDCG@10: bench/README.md); fusion mode always runs it.",
    )
    fusion_method: Literal["rrf", "alpha"] = Field(
        default="alpha",
        description="How the legs are fused: an α-blend of dense and BM25 scores, or reciprocal rank fusion "
        "(chosen across four sets: docs/decisions/retrieval.md).",
    )
    fusion_alpha: float = Field(
        default=0.8, ge=0.0, le=1.0, description="The α-blend's weight of the dense score."
    )
    dense_lead_bonus: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="Added to the dense score of each document's lead chunk before fusion (0: off).",
    )
    dense_centroid_weight: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="A dense hit's share of its document's centroid (the mean of its chunks' vectors) "
        "against the chunk's own score (0: the chunk alone).",
    )
    fusion_guard_top: int = Field(
        default=10,
        ge=1,
        description="The α-blend falls back to dense alone when the first dense leg's and BM25's first this "
        "many documents share fewer than FUSION_GUARD_MIN_SHARED.",
    )
    fusion_guard_min_shared: int = Field(
        default=0, ge=0, description="Documents the guard wants shared (0: the guard never falls back)."
    )
    rrf_weight_dense: float = Field(
        default=1.0, description="Reciprocal rank fusion's weight of each dense leg."
    )
    rrf_weight_hyde: float = Field(
        default=1.0, description="Reciprocal rank fusion's weight of the HyDE leg."
    )
    rrf_weight_bm25: float = Field(
        default=0.35, description="Reciprocal rank fusion's weight of BM25 (docs/decisions/retrieval.md)."
    )
    rrf_weight_exact: float = Field(
        default=0.1, description="Reciprocal rank fusion's weight of the exact leg."
    )
    planner_timeout_s: float = Field(
        default=20.0,
        description="Seconds the LLM's plan (and a follow-up's rewrite) may take before the rules' plan.",
    )
    planner_max_tokens: int = Field(default=320, description="Tokens the LLM's plan may run to.")
    exact_max_keywords: int = Field(
        default=6, description="Hard keywords the exact leg searches for at most."
    )
    rg_path: Path | None = Field(default=None, description="The ripgrep binary; unset: `rg` on PATH.")
    k_adjacent: int = Field(
        default=0,
        ge=0,
        le=3,
        description="Neighbouring chunks stitched to each side of a kept candidate's passage (0: the chunk "
        "alone).",
    )
    search_timeout_s: float = Field(
        default=60.0, description="Seconds GET /v1/search waits for the search stage."
    )

    @field_validator("hyde_weak_writers", mode="before")
    @classmethod
    def _split_writers(cls, value: object) -> object:
        """``HINDSIGHT_HYDE_WEAK_WRITERS`` is a comma-separated list."""
        return _split_commas(value)

    def rules(self) -> dict[str, bool]:
        """The reranker's inputs are cut from the pool, so they fit in it."""
        return {
            f"RERANK_INPUTS_PRECISE ({self.rerank_inputs_precise}) must not exceed POOL_PRECISE "
            f"({self.pool_precise})": self.rerank_inputs_precise <= self.pool_precise,
            f"RERANK_INPUTS_EXHAUSTIVE ({self.rerank_inputs_exhaustive}) must not exceed POOL_EXHAUSTIVE "
            f"({self.pool_exhaustive})": self.rerank_inputs_exhaustive <= self.pool_exhaustive,
        }

    def pool_size(self, strategy: Strategy) -> int:
        """Candidates per leg for ``strategy``."""
        return self.pool_precise if strategy is Strategy.PRECISE else self.pool_exhaustive

    def rerank_inputs(self, strategy: Strategy) -> int:
        """The fused candidates ``strategy`` sends to the reranker."""
        if strategy is Strategy.PRECISE:
            return self.rerank_inputs_precise
        return self.rerank_inputs_exhaustive


class RerankingSettings(SettingsGroup):
    """The cross-encoder reranker and its micro-batcher."""

    title: ClassVar[str] = "Reranking"

    reranker_model_dir: Path | None = Field(
        default=None,
        description="The reranker's folder; unset: `ms-marco-MiniLM-L-6-v2` under the models folder.",
    )
    rerank_batch_size: int = Field(default=64, ge=1, description="Pairs per cross-encoder run at most.")
    rerank_threshold: float | None = Field(
        default=None,
        description="The cut on the cross-encoder's logit: unset takes the provisioned model's own "
        "calibrated cut (its provenance's keep_logit), else -5.0, the ms-marco models' scale.",
    )
    rerank_answerable_logit: float | None = Field(
        default=None,
        description='The top logit under which no passage answers the question ("nothing found"): unset '
        "takes the model's calibrated answerable_logit; a model without one never refuses.",
    )
    rerank_fallback_k: int = Field(
        default=20, description="Candidates kept, in fused order, when none passes the logit cut."
    )
    reranker_precision: Literal["auto", "int8", "fp32"] = Field(
        default="auto",
        description="int8 exists only once provisioning verified it against fp32; auto serves whichever "
        "verified precision provisioning measured fastest on this machine.",
    )
    rerank_max_wait_ms: float = Field(
        default=10.0,
        description="How long the micro-batcher holds a partial batch for other questions' pairs.",
    )


class SynthesisSettings(SettingsGroup):
    """The synthesizer's map and reduce steps."""

    title: ClassVar[str] = "Synthesis"

    map_batch_size: int = Field(default=10, ge=1, description="Passages per map task.")
    map_passage_chars: int = Field(
        default=1200, description="Characters of a passage the map step reads at most."
    )
    map_max_facts: int = Field(
        default=6, description="Facts the map step extracts from one batch of passages at most."
    )
    narrator_max_facts: int = Field(
        default=8, description="Facts the narrated answer is written from at most."
    )
    narrator_token_budget: int = Field(default=1200, description="Tokens the narrated answer may run to.")
    compress_max_calls: int = Field(
        default=3, description="LLM calls the reduce step may spend compressing facts."
    )
    verify_max_claims: int = Field(
        default=8,
        description="Claims of an answer the LLM checks against their passages at most (the rest are "
        "checked without it).",
    )
    self_correct: bool = Field(
        default=True,
        description="Whether the LLM rewrites a claim its passages do not support from that evidence.",
    )


class TaskSettings(SettingsGroup):
    """The rules every Celery worker runs under: redelivery, time limits, stalls, and how long traces live.

    Each hard time limit stays below its visibility timeout, so no task still running is handed to a
    second worker: question stages below the question one, index and scrape tasks ("jobs") below the
    broker's."""

    title: ClassVar[str] = "Tasks (workers)"

    broker_visibility_timeout_s: int = Field(
        default=3600,
        description="Seconds after which Redis redelivers a scrape or index message a killed worker had not "
        "acknowledged (long: these tasks run long and must not run twice).",
    )
    question_visibility_timeout_s: int = Field(
        default=300,
        description="The same for the question stages (retrieve, rerank, map, reduce) a user waits on: "
        "short.",
    )
    question_soft_time_limit_s: int = Field(
        default=240,
        ge=1,
        description="Past this a question stage fails with a clear reason (the question's stream ends "
        "failed).",
    )
    question_time_limit_s: int = Field(
        default=280,
        ge=1,
        description="Past this a question stage's process is killed (prefork pools; the reranker's thread "
        "pool enforces neither limit).",
    )
    job_soft_time_limit_s: int = Field(
        default=3300, ge=1, description="Past this an index or scrape task fails with a clear reason."
    )
    job_time_limit_s: int = Field(
        default=3500, ge=1, description="Past this an index or scrape task's process is killed."
    )
    question_restore_interval_s: int = Field(
        default=5,
        description="Seconds between question workers' sweeps for messages whose visibility timeout passed.",
    )
    question_stall_s: int = Field(
        default=900,
        description="A map stage with no progress for this long lost a message: the reduce worker sends the "
        "missing batches again. It exceeds the visibility timeout plus a map batch's hard time limit, or a "
        "batch waiting for redelivery would be sent twice.",
    )
    question_stall_check_s: float = Field(
        default=10.0, description="Seconds between the reduce worker's sweeps for stalled map stages."
    )
    reranker_heartbeat_s: float = Field(
        default=15.0,
        description="Seconds between the reranker's status heartbeats in Redis (read by /healthz).",
    )
    event_ttl_s: int = Field(
        default=86_400,
        description="Seconds a question's or job's events and results stay in Redis after the last one.",
    )

    def rules(self) -> dict[str, bool]:
        """Soft limits below hard ones, hard ones below the visibility timeouts, the stall time above both."""
        return {
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


class GatewaySettings(SettingsGroup):
    """The HTTP gateway: where it listens, who it lets in, and its limits."""

    title: ClassVar[str] = "Gateway"

    gateway_host: str = Field(default="127.0.0.1", description="The address the gateway binds.")
    gateway_port: int = Field(default=8000, description="The port the gateway binds.")
    gateway_head_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds a connection has to send a request's whole head (request line and headers).",
    )
    gateway_url: str = Field(
        default="http://127.0.0.1:8000", description="Where clients (the CLI, bench) reach the gateway."
    )
    gateway_auth: Literal["keys", "open"] = Field(
        default="keys",
        description="keys demands an API key on /v1; open is honoured only on a loopback address unless "
        "GATEWAY_ALLOW_OPEN_REMOTE says, explicitly, that an open gateway on the network is intended.",
    )
    gateway_allow_open_remote: bool = Field(
        default=False, description="Allow GATEWAY_AUTH=open on an address other than loopback."
    )
    api_keys_file: Path | None = Field(
        default=None,
        description="The hashed API keys the gateway accepts; unset: `api_keys.json` in the data folder.",
    )
    api_key: str | None = Field(
        default=None, description="The key the CLI sends; unset: the local stack's own key."
    )
    max_request_bytes: int = Field(default=65_536, description="Bytes a request's body may have.")
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host names the gateway answers to (comma-separated), besides loopback names, the bind "
        "address and the host of GATEWAY_URL; `*` answers every name. Any other Host header (DNS "
        "rebinding) gets 400.",
    )
    max_streams_per_key: int = Field(
        default=8, ge=1, description="Event streams one key may hold open on one gateway at once."
    )
    stream_idle_s: float | None = Field(
        default=None,
        gt=0,
        description="Seconds without a new event after which an open stream ends with a failed event; "
        "unset: the longest the work's next step may take (QUESTION_STALL_S + QUESTION_TIME_LIMIT_S for "
        "questions, JOB_TIME_LIMIT_S for index jobs).",
    )
    health_cache_s: float = Field(
        default=2.0,
        description="Seconds GET /v1/health reuses its last reading (a broadcast to the workers) for every "
        "caller.",
    )
    max_question_chars: int = Field(default=2_000, description="Characters a question may have.")
    rate_limit_per_minute: int = Field(
        default=60,
        description="Requests one caller may make per clock minute (429 with Retry-After beyond it).",
    )
    read_rate_limit_per_minute: int = Field(
        default=600, description="Reads (status polls, answers, event streams) one key may make a minute."
    )
    backpressure_max_queued: int = Field(
        default=200,
        description="Messages the queues behind an endpoint may hold before new work gets 429 with "
        "Retry-After.",
    )
    backpressure_retry_after_s: int = Field(
        default=5, description="The Retry-After given to work refused for backpressure."
    )
    refuse_without_workers: bool = Field(
        default=True,
        description="A question (or a scrape) is refused (503) while a stage's queue has no live worker; "
        "false where workers are started on demand by queue depth, so a queued task is what brings its "
        "worker up.",
    )
    metrics_poll_s: float = Field(
        default=1.0, description="Seconds between the gateway's reads of the queue metrics."
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        """``HINDSIGHT_ALLOWED_HOSTS`` is a comma-separated list."""
        return _split_commas(value)


class ScrapingSettings(SettingsGroup):
    """The Perplexity export (the scraper). Delays are seconds; tests set them to ~0."""

    title: ClassVar[str] = "Scraping"

    perplexity_base_url: str = Field(
        default="https://www.perplexity.ai", description="The Perplexity site scraped."
    )
    perplexity_state: Path | None = Field(
        default=None,
        description="The browser's saved login; unset: `perplexity-state.json` in the data folder.",
    )
    export_dir: Path | None = Field(
        default=None, description="Where exported threads are written; unset: `exports` in the data folder."
    )
    chromium_path: Path | None = Field(
        default=None, description="The Chromium binary; unset: Playwright's own."
    )
    scrape_headless: bool = Field(
        default=False,
        description="Headful by default: Cloudflare challenges headless Chromium. Without a DISPLAY the "
        "scraper starts a virtual one (Xvfb); `hindsight scrape --headless` or this setting skips the "
        "window.",
    )
    scrape_challenge_wait_s: float = Field(
        default=20.0,
        description="How long a Cloudflare challenge page is given to clear by itself before the run stops.",
    )
    scrape_every: timedelta = Field(
        default=timedelta(0),
        description="The scheduled sync's period (seconds or ISO 8601 such as PT6H); 0 turns it off.",
    )
    scrape_list_page_size: int = Field(
        default=50, description="Threads asked for per page of the thread list."
    )
    scrape_page_delay_s: float = Field(default=0.8, description="Pause between pages of the thread list.")
    scrape_page_jitter_s: float = Field(
        default=0.7, description="Random extra pause between list pages, at most."
    )
    scrape_thread_delay_s: float = Field(default=1.0, description="Pause between threads fetched.")
    scrape_thread_jitter_s: float = Field(
        default=2.0, description="Random extra pause between threads, at most."
    )
    scrape_max_attempts: int = Field(
        default=4, description="Attempts at one request before the thread fails."
    )
    scrape_backoff_base_s: float = Field(
        default=2.0,
        description="The backoff before a request's first retry; it grows each attempt up to "
        "SCRAPE_BACKOFF_MAX_S.",
    )
    scrape_backoff_max_s: float = Field(default=60.0, description="The longest backoff between attempts.")
    scrape_timeout_s: float = Field(default=30.0, description="Seconds one request may take.")
    scrape_login_timeout_s: float = Field(
        default=300.0, description="Seconds `hindsight scrape --login` waits for the user to log in."
    )


GROUPS: dict[str, type[SettingsGroup]] = {
    "storage": StorageSettings,
    "embedding": EmbeddingSettings,
    "generation": GenerationSettings,
    "indexing": IndexingSettings,
    "retrieval": RetrievalSettings,
    "reranking": RerankingSettings,
    "synthesis": SynthesisSettings,
    "tasks": TaskSettings,
    "gateway": GatewaySettings,
    "scraping": ScrapingSettings,
}
"""Each group's name in :class:`Settings` and its class, in the order ``docs/settings.md`` lists them."""

GROUP_OF: dict[str, str] = {name: group for group, cls in GROUPS.items() for name in cls.model_fields}
"""Each grouped field's group (field names are unique across groups: ``tests/shared`` checks it)."""


class Settings(BaseSettings):
    """The shared facts and every group; a service's entry point builds it and hands each function its group.

    ``Settings(pool_precise=20)`` routes a flat field name to its group (which then reads the rest of
    itself from the environment: keyword arguments beat the environment, which beats defaults); an
    unknown name is refused. :meth:`replace` is the validated copy."""

    model_config = SettingsConfigDict(env_prefix="HINDSIGHT_", extra="ignore")

    title: ClassVar[str] = "Shared"

    redis_url: str = Field(
        default="redis://127.0.0.1:6380/0", description="The broker, events and state (Redis)."
    )
    data_dir: Path = Field(
        default=Path(".hindsight"),
        description="The data folder: the store, keys, exports and the local stack's state.",
    )
    models_dir: Path | None = Field(
        default=None, description="The provisioned models' folder; unset: `models` in the data folder."
    )
    ollama_url: str = Field(
        default="http://127.0.0.1:11434",
        description="The Ollama server, for chat (LLM=ollama) and embeddings (EMBEDDER=ollama).",
    )

    storage: StorageSettings = Field(default_factory=StorageSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    indexing: IndexingSettings = Field(default_factory=IndexingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    reranking: RerankingSettings = Field(default_factory=RerankingSettings)
    synthesis: SynthesisSettings = Field(default_factory=SynthesisSettings)
    tasks: TaskSettings = Field(default_factory=TaskSettings)
    gateway: GatewaySettings = Field(default_factory=GatewaySettings)
    scraping: ScrapingSettings = Field(default_factory=ScrapingSettings)

    @model_validator(mode="before")
    @classmethod
    def _route_flat_names(cls, data: Any) -> Any:
        """Build every group from the flat names given for it (``Group(**names)``, so the environment
        fills the rest, as the group's default would); a group given whole (an instance, or a dict
        from JSON) takes the flat names on top. Raises ``ValueError`` naming any name that is neither
        a field nor a group's field."""
        if not isinstance(data, dict):
            return data
        unknown = sorted(
            name
            for name in data
            if name not in cls.model_fields and name not in cls.model_computed_fields and name not in GROUP_OF
        )
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(unknown)}")
        routed = {name: value for name, value in data.items() if name in cls.model_fields}
        for group, group_cls in GROUPS.items():
            flat = {name: value for name, value in data.items() if GROUP_OF.get(name) == group}
            given = routed.get(group)
            if flat or not isinstance(given, group_cls):
                base = given._values() if isinstance(given, SettingsGroup) else dict(given or {})
                routed[group] = _build_group(group_cls, {**base, **flat})
        return routed

    def replace(self, **changes: Any) -> Settings:
        """A validated copy with ``changes``: flat field names of any group or the shared fields
        (``settings.replace(pool_precise=20, data_dir=tmp)``); each group's rules are checked again,
        which ``model_copy(update=…)`` would skip."""
        values: dict[str, Any] = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**{**values, **changes})

    @computed_field  # type: ignore[prop-decorator]
    @property
    def resolved_models_dir(self) -> Path:
        """The provisioned models' folder."""
        return (self.models_dir or self.data_dir / "models").resolve()

    @property
    def embedder_dir(self) -> Path:
        """The ONNX embedder's folder."""
        return (self.embedding.embedder_model_dir or self.resolved_models_dir / "all-MiniLM-L6-v2").resolve()

    @property
    def reranker_dir(self) -> Path:
        """The reranker's folder."""
        return (
            self.reranking.reranker_model_dir or self.resolved_models_dir / "ms-marco-MiniLM-L-6-v2"
        ).resolve()

    @property
    def store_dir(self) -> Path:
        """The embedded store's folder."""
        return (self.data_dir / "store").resolve()

    @property
    def perplexity_state_path(self) -> Path:
        """The browser's saved Perplexity login."""
        return (self.scraping.perplexity_state or self.data_dir / "perplexity-state.json").resolve()

    @property
    def export_root(self) -> Path:
        """Where exported threads are written."""
        return (self.scraping.export_dir or self.data_dir / "exports").resolve()

    @property
    def run_dir(self) -> Path:
        """The local stack's pid and log files."""
        return (self.data_dir / "run").resolve()

    @property
    def keys_file(self) -> Path:
        """The hashed API keys the gateway accepts."""
        return (self.gateway.api_keys_file or self.data_dir / "api_keys.json").resolve()

    @property
    def roots_file(self) -> Path:
        """The folders ``hindsight index`` made roots, one a line (mode 0600)."""
        return roots_file_in(self.data_dir)

    @property
    def redis_password_file(self) -> Path:
        """The password of the local stack's Redis user, created by ``hindsight up`` (mode 0600)."""
        return (self.data_dir / "redis.password").resolve()

    @property
    def cli_key_file(self) -> Path:
        """The local CLI's own key, created by ``hindsight up`` (mode 0600)."""
        return (self.data_dir / "cli.key").resolve()


def roots_file_in(data_dir: Path) -> Path:
    """The file of the folders ``hindsight index`` made roots, in the data folder ``data_dir``."""
    return (data_dir / "roots.txt").resolve()


VALUE_ERROR = "Value error, "
"""What pydantic puts before a validator's ``ValueError`` message."""


def _build_group(group_cls: type[SettingsGroup], values: dict[str, Any]) -> SettingsGroup:
    """``group_cls(**values)``, its validation errors raised as ``ValueError`` (a validator may not
    raise ``ValidationError``) with each error's location and message."""
    try:
        return group_cls(**values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or group_cls.__name__}: {err['msg'].removeprefix(VALUE_ERROR)}"
            for err in exc.errors()
        )
        raise ValueError(problems) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
