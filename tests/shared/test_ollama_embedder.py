"""The Ollama embedder against a local HTTP stand-in of Ollama's ``/api/embed`` endpoint.

The Ollama server cannot run on this machine, so ``OllamaStandIn`` (tests/shared/ollama_standin.py)
plays it over real HTTP; the embedder uses the real ``ollama`` client and ``httpx`` underneath.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import ollama
import pytest

from shared.ollama_embedder import (
    DOCUMENT_PREFIX,
    QUERY_PREFIX,
    EmbedderError,
    OllamaEmbedder,
    provisioned_tokenizer_path,
)
from shared.settings import Settings
from tests.conftest import require_embedder
from tests.shared.ollama_standin import OllamaStandIn, standin_vector


def tokenizer_path() -> Path:
    return provisioned_tokenizer_path(Settings(models_dir=require_embedder()))


def embedder_for(standin: OllamaStandIn, timeout_s: float = 5.0, **kwargs: object) -> OllamaEmbedder:
    client = ollama.Client(host=standin.url, timeout=timeout_s)
    options = {"batch_size": 3, "retries": 2, "backoff_s": 0.01, **kwargs}
    return OllamaEmbedder(client, "nomic-embed-text", tokenizer_path(), **options)  # type: ignore[arg-type]


def test_documents_are_prefixed_batched_and_unit_length() -> None:
    with OllamaStandIn() as standin:
        embedder = embedder_for(standin)
        texts = [f"passage {i}" for i in range(7)]
        vectors = embedder.embed_documents(texts)
    assert vectors.shape == (7, 768)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert [len(r["input"]) for r in standin.requests] == [3, 3, 1]  # type: ignore[arg-type]
    sent = [text for r in standin.requests for text in r["input"]]  # type: ignore[attr-defined]
    assert sent == [DOCUMENT_PREFIX + t for t in texts]
    expected = np.asarray(standin_vector(DOCUMENT_PREFIX + "passage 4", 768))
    assert np.allclose(vectors[4], expected / np.linalg.norm(expected), atol=1e-5)


def test_queries_use_the_query_prefix() -> None:
    with OllamaStandIn() as standin:
        vector = embedder_for(standin).embed_query("what is a cross-encoder?")
    assert vector.shape == (768,)
    assert standin.requests[0]["input"] == [QUERY_PREFIX + "what is a cross-encoder?"]
    assert standin.requests[0]["model"] == "nomic-embed-text"


def test_server_errors_are_retried_then_succeed() -> None:
    with OllamaStandIn(fail_next=2) as standin:
        vectors = embedder_for(standin).embed_documents(["one", "two"])
    assert vectors.shape == (2, 768)
    assert len(standin.requests) == 3


def test_persistent_server_errors_raise_after_the_retries() -> None:
    with OllamaStandIn(fail_next=10) as standin, pytest.raises(EmbedderError, match="server busy"):
        embedder_for(standin).embed_documents(["one"])
    assert len(standin.requests) == 3


def test_a_missing_model_fails_at_once_with_the_servers_reason() -> None:
    with OllamaStandIn(refuse=True) as standin, pytest.raises(EmbedderError, match="try pulling it"):
        embedder_for(standin).embed_documents(["one"])
    assert len(standin.requests) == 1


def test_a_stalled_server_times_out_instead_of_hanging() -> None:
    """Both attempts give up at the read timeout, long before the stalled server would answer."""
    stall_s = 60.0
    with OllamaStandIn(stall_s=stall_s) as standin:
        started = time.monotonic()
        with pytest.raises(EmbedderError, match="unreachable"):
            embedder_for(standin, timeout_s=0.2, retries=1).embed_query("hello")
        assert time.monotonic() - started < stall_s / 2
        assert len(standin.requests) == 2


def test_wrong_dimension_is_an_error() -> None:
    with OllamaStandIn(dimension=512) as standin, pytest.raises(EmbedderError, match="shape"):
        embedder_for(standin).embed_documents(["one"])


def test_an_all_zero_row_after_a_model_load_is_asked_again_and_never_returned() -> None:
    with OllamaStandIn(zero_rows_next=1) as standin:
        vectors = embedder_for(standin).embed_documents(["one", "two"])
        assert len(standin.requests) == 2
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_all_zero_rows_that_persist_are_refused_with_a_clear_error() -> None:
    with (
        OllamaStandIn(zero_rows_next=10) as standin,
        pytest.raises(EmbedderError, match="all-zero or non-finite"),
    ):
        embedder_for(standin).embed_documents(["one", "two"])


def test_token_spans_are_bert_word_pieces_for_chunk_sizing() -> None:
    with OllamaStandIn() as standin:
        embedder = embedder_for(standin)
    spans = embedder.token_spans("Sourdough fermentation")
    assert spans[0] == (0, 4) and spans[-1][1] == len("Sourdough fermentation")


def test_from_settings_uses_the_configured_server_model_and_dimension() -> None:
    with OllamaStandIn(dimension=16) as standin:
        settings = Settings(
            ollama_url=standin.url,
            ollama_embed_dimension=16,
            ollama_embed_model="nomic-x",
            models_dir=require_embedder(),
        )
        vector = OllamaEmbedder.from_settings(settings).embed_query("q")
    assert vector.shape == (16,) and standin.requests[0]["model"] == "nomic-x"
