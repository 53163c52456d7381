"""The last layer pruned to [CLS] gives the full graph's logits; other graphs are left alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from provisioning.cls_pruning import prune_to_cls
from provisioning.onnx_export import export_encoder_onnx, packaged_minilm_dir
from services.reranker.cross_encoder import MAX_PAIR_TOKENS, TOKENIZER_FILE
from shared.onnx_runtime import create_session, encoder_inputs, load_tokenizer
from tests.reranker.conftest import passages


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full (unpruned) graphs: a cross-encoder with a head, and a bare encoder without one."""
    from transformers import AutoModel, AutoModelForSequenceClassification

    folder = tmp_path_factory.mktemp("exported")
    source = str(packaged_minilm_dir())
    classifier = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1)
    export_encoder_onnx(classifier.eval(), folder / "classifier.onnx")
    export_encoder_onnx(AutoModel.from_pretrained(source).eval(), folder / "encoder.onnx")
    return folder


def logits(model: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    """Each pair alone, unpadded."""
    session = create_session(model, threads=1)
    tokenizer = load_tokenizer(packaged_minilm_dir() / TOKENIZER_FILE, MAX_PAIR_TOKENS)
    tokenizer.no_padding()
    scores = []
    for encoding in tokenizer.encode_batch(pairs):
        ids = np.array([encoding.ids], dtype=np.int64)
        feed = encoder_inputs(session, ids, np.ones_like(ids), np.array([encoding.type_ids], dtype=np.int64))
        scores.append(float(session.run(None, feed)[0].reshape(-1)[0]))
    return np.array(scores)


def test_pruned_last_layer_gives_the_full_graphs_logits(exported: Path, tmp_path: Path) -> None:
    pairs = [("How does TCP guarantee delivery?", passage) for passage in passages(12, seed=5)]
    assert prune_to_cls(exported / "classifier.onnx", tmp_path / "pruned.onnx") == "pruned"
    full, pruned = logits(exported / "classifier.onnx", pairs), logits(tmp_path / "pruned.onnx", pairs)
    np.testing.assert_allclose(pruned, full, atol=1e-5)
    slices = [n for n in onnx.load(str(tmp_path / "pruned.onnx")).graph.node if n.op_type == "Slice"]
    assert (
        len(slices)
        == len([n for n in onnx.load(str(exported / "classifier.onnx")).graph.node if n.op_type == "Slice"])
        + 2
    )


def test_pruning_twice_or_a_graph_without_a_cls_head_writes_nothing(exported: Path, tmp_path: Path) -> None:
    assert prune_to_cls(exported / "classifier.onnx", tmp_path / "once.onnx") == "pruned"
    assert prune_to_cls(tmp_path / "once.onnx", tmp_path / "twice.onnx") == "already pruned"
    assert prune_to_cls(exported / "encoder.onnx", tmp_path / "encoder.onnx") == "no match"
    assert not (tmp_path / "twice.onnx").exists() and not (tmp_path / "encoder.onnx").exists()
