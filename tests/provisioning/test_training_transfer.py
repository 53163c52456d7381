"""The training inputs packed for a GPU machine come back whole: pairs and evaluation rows byte for
byte, the MiniLM's weights within fp16 and its word embeddings within one int8 step per row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from provisioning.onnx_export import packaged_minilm_dir
from provisioning.reranker_training.transfer import pack, unpack


def test_packed_inputs_unpack_to_the_same_pairs_rows_and_nearly_the_same_weights(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    (pairs / "passages.jsonl").write_text('{"id": 0, "section": "info:tar#1", "text": "tar -xf a.tar"}\n')
    (pairs / "queries.jsonl").write_text('{"query": "Extracting", "positive": 0, "section": "info:tar#1"}\n')
    shared = {"doc": "d#1", "text": "the same passage, served twice"}
    rows = [
        {
            "set": "s",
            "qid": "1",
            "query": "q1",
            "answerable": True,
            "head": [shared],
            "tail": [],
            "qrels": {},
        },
        {
            "set": "s",
            "qid": "2",
            "query": "q2",
            "answerable": False,
            "head": [shared],
            "tail": [],
            "qrels": {},
        },
    ]
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text("".join(json.dumps(row) + "\n" for row in rows))

    pack(pairs, inputs, tmp_path / "packed")
    unpack(tmp_path / "packed", tmp_path / "work")

    work = tmp_path / "work"
    for name in ("passages.jsonl", "queries.jsonl"):
        assert (work / "pairs" / name).read_bytes() == (pairs / name).read_bytes()
    assert [json.loads(line) for line in (work / "eval.jsonl").read_text().splitlines()] == rows
    original = load_file(str(packaged_minilm_dir() / "model.safetensors"))
    rebuilt = load_file(str(work / "minilm" / "model.safetensors"))
    assert rebuilt.keys() == original.keys()
    for name, tensor in original.items():
        step = np.abs(tensor).max(axis=-1, keepdims=True) / 127 if "word_embeddings" in name else 0
        assert np.all(np.abs(rebuilt[name] - tensor) <= np.maximum(step, np.abs(tensor) * 1e-3) + 1e-6), name
