"""The provisioned int8 embedder: each text's vector is its own, and it stays close to fp32."""

from __future__ import annotations

import json

import numpy as np
import pytest

from provisioning.calibration import CALIBRATION_TEXTS
from provisioning.embedder import MIN_EMBEDDER_COSINE
from shared.embedding import OnnxEmbedder
from shared.vectors import DegenerateVectorsError
from tests.conftest import require_embedder

LONG_NEIGHBOUR = " ".join(CALIBRATION_TEXTS * 4)


def test_a_texts_vector_does_not_depend_on_what_shares_its_batch() -> None:
    embedder = OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2")
    alone = np.stack([embedder.embed_query(text) for text in CALIBRATION_TEXTS])
    padded_with_a_long_neighbour = embedder.embed_documents([*CALIBRATION_TEXTS, LONG_NEIGHBOUR])
    assert np.array_equal(padded_with_a_long_neighbour[: len(CALIBRATION_TEXTS)], alone)


def test_provisioning_recorded_int8_agreeing_with_fp32_within_the_bound() -> None:
    record = json.loads((require_embedder() / "all-MiniLM-L6-v2" / "prepare.json").read_text())
    assert MIN_EMBEDDER_COSINE <= record["min_cosine"] <= record["mean_cosine"] <= 1.0


def test_a_model_that_answers_nan_or_zero_vectors_is_refused_never_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ONNX session is the edge faked here: it answers hidden states that pool to NaN, then zero."""
    embedder = OnnxEmbedder(require_embedder() / "all-MiniLM-L6-v2", threads=1)
    for broken in (np.nan, 0.0):
        monkeypatch.setattr(
            embedder, "run", lambda encodings, value=broken: np.full((len(encodings), 384), value)
        )
        with pytest.raises(
            DegenerateVectorsError, match="all-MiniLM-L6-v2-int8 gave 2 all-zero or non-finite"
        ):
            embedder.embed_documents(["sourdough", "rye"])
        with pytest.raises(DegenerateVectorsError):
            embedder.embed_query("sourdough")
