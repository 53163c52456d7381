"""The Ollama embedder against a local HTTP stand-in of Ollama's ``/api/embed`` endpoint, and the
server-facing part of it against a real Ollama when ``HINDSIGHT_TEST_OLLAMA_URL`` names one.

The Ollama server cannot run on this machine, so ``OllamaStandIn`` (tests/shared/ollama_standin.py)
plays it over real HTTP; the embedder uses the real ``ollama`` client and ``httpx`` underneath. The
tests marked "conformance" run against both; the real server needs ``HINDSIGHT_TEST_OLLAMA_MODEL``
(default ``nomic-embed-text``, 768 dimensions) pulled, and is skipped with that reason otherwise.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
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
from shared.vectors import DegenerateVectorsError
from tests.conftest import require_embedder
from tests.shared.ollama_standin import OllamaStandIn, standin_vector


def tokenizer_path() -> Path:
    return provisioned_tokenizer_path(Settings(models_dir=require_embedder()).embedder_dir)


def embedder_for(standin: OllamaStandIn, timeout_s: float = 5.0, **kwargs: object) -> OllamaEmbedder:
    return embedder_at(standin.url, timeout_s=timeout_s, **kwargs)


def embedder_at(
    url: str, model: str = "nomic-embed-text", timeout_s: float = 5.0, **kwargs: object
) -> OllamaEmbedder:
    client = ollama.Client(host=url, timeout=timeout_s)
    options = {"batch_size": 3, "retries": 2, "backoff_s": 0.01, **kwargs}
    return OllamaEmbedder(client, model, tokenizer_path(), **options)  # type: ignore[arg-type]


REAL_OLLAMA = os.environ.get("HINDSIGHT_TEST_OLLAMA_URL")
REAL_MODEL = os.environ.get("HINDSIGHT_TEST_OLLAMA_MODEL", "nomic-embed-text")


@pytest.fixture(params=["standin", "server"])
def ollama_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Conformance: the stand-in's URL, or the real server's named by ``HINDSIGHT_TEST_OLLAMA_URL``."""
    if request.param == "server":
        if not REAL_OLLAMA:
            pytest.skip(
                "no real Ollama: set HINDSIGHT_TEST_OLLAMA_URL (and _MODEL, pulled) to run against one"
            )
        yield REAL_OLLAMA
        return
    with OllamaStandIn() as standin:
        yield standin.url


def test_conformance_embeddings_are_unit_length_as_the_server_sends_them(ollama_url: str) -> None:
    """Real Ollama L2-normalises what ``/api/embed`` returns; the stand-in does too."""
    model = REAL_MODEL if ollama_url == REAL_OLLAMA else "nomic-embed-text"
    reply = httpx.post(f"{ollama_url}/api/embed", json={"model": model, "input": ["a", "b c"]}, timeout=60)
    sent = np.asarray(reply.json()["embeddings"])
    assert sent.shape == (2, 768) and np.allclose(np.linalg.norm(sent, axis=1), 1.0, atol=1e-4)
    embedder = embedder_at(ollama_url, model, timeout_s=60)
    again = embedder.embed_documents(["sourdough starter", "sourdough starter"])
    assert np.allclose(again[0], again[1], atol=1e-5), "the same text, the same vector"
    assert not np.allclose(embedder.embed_query("sourdough starter"), again[0]), "queries are prefixed"


def test_conformance_a_missing_model_is_refused_at_once_with_the_servers_words_and_the_pull_command(
    ollama_url: str,
) -> None:
    model = "hindsight-no-such-model"
    reply = httpx.post(f"{ollama_url}/api/embed", json={"model": model, "input": ["a"]}, timeout=60)
    assert reply.status_code == 404
    assert reply.json() == {"error": f'model "{model}" not found, try pulling it first'}
    with pytest.raises(EmbedderError, match=f"run `ollama pull {model}`"):
        embedder_at(ollama_url, model).embed_query("q")


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
    assert len(standin.requests) == 1, "a 404 is not retried"


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
        pytest.raises(DegenerateVectorsError, match="all-zero or non-finite"),
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
        vector = OllamaEmbedder.from_settings(
            settings.embedding, settings.ollama_url, settings.embedder_dir
        ).embed_query("q")
    assert vector.shape == (16,) and standin.requests[0]["model"] == "nomic-x"
