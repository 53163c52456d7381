"""Pack the training inputs small enough to send to a GPU machine, and unpack them there.

    python -m provisioning.reranker_training.transfer pack PAIRS_DIR INPUTS.jsonl OUT_DIR
    python -m provisioning.reranker_training.transfer unpack OUT_DIR WORK_DIR

A machine lent for training may take a limited upload (64 MiB here). The packed folder holds the
packaged MiniLM with its word-embedding matrix in int8 per row (the matrix stays frozen in training
and the shipped weights leave it out, so the model installed joins the packaged fp32 rows again) and
every other weight in fp16, the pairs and the evaluation inputs compressed with xz (an evaluation
passage stored once however many questions it serves). About 46 MB for 84k passages.
``unpack`` rebuilds a Hugging Face folder (``WORK/minilm``), ``WORK/pairs`` and ``WORK/eval.jsonl``
for ``provisioning.reranker_training.train``.
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
from pathlib import Path

import numpy as np

from provisioning.onnx_export import packaged_minilm_dir

MODEL_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)
PAIR_FILES = ("passages.jsonl", "queries.jsonl")


def pack(pairs: Path, inputs: Path, out: Path) -> None:
    from safetensors.numpy import load_file, save_file

    source, model = packaged_minilm_dir(), out / "minilm"
    shutil.rmtree(out, ignore_errors=True)
    model.mkdir(parents=True)
    for name in MODEL_FILES:
        shutil.copy(source / name, model / name)
    state = load_file(str(source / "model.safetensors"))
    key = next(name for name in state if "word_embeddings" in name)
    matrix = state.pop(key)
    scale = np.abs(matrix).max(axis=1, keepdims=True) / 127.0
    np.save(model / "word_embeddings_int8.npy", np.round(matrix / scale).astype(np.int8))
    np.save(model / "word_embeddings_scale.npy", scale.astype(np.float32))
    (model / "word_embeddings_key.txt").write_text(key)
    save_file(
        {name: tensor.astype(np.float16) for name, tensor in state.items()}, str(model / "rest.safetensors")
    )
    for name in PAIR_FILES:
        (out / f"{name}.xz").write_bytes(lzma.compress((pairs / name).read_bytes()))
    rows = [json.loads(line) for line in inputs.read_text().splitlines() if line.strip()]
    texts: dict[str, int] = {}
    for row in rows:
        for candidate in row["head"]:
            candidate["text"] = texts.setdefault(candidate["text"], len(texts))
    packed = json.dumps({"texts": list(texts), "rows": rows}).encode()
    (out / "eval.json.xz").write_bytes(lzma.compress(packed))


def unpack(packed: Path, work: Path) -> None:
    import torch
    from safetensors.numpy import load_file
    from safetensors.torch import save_file

    model = work / "minilm"
    shutil.copytree(packed / "minilm", model, dirs_exist_ok=True)
    state = {
        name: torch.tensor(t.astype(np.float32))
        for name, t in load_file(str(model / "rest.safetensors")).items()
    }
    rows = np.load(model / "word_embeddings_int8.npy").astype(np.float32)
    state[(model / "word_embeddings_key.txt").read_text()] = torch.tensor(
        rows * np.load(model / "word_embeddings_scale.npy")
    )
    save_file(state, str(model / "model.safetensors"))
    (work / "pairs").mkdir(parents=True, exist_ok=True)
    for name in PAIR_FILES:
        (work / "pairs" / name).write_bytes(lzma.decompress((packed / f"{name}.xz").read_bytes()))
    data = json.loads(lzma.decompress((packed / "eval.json.xz").read_bytes()))
    with (work / "eval.jsonl").open("w") as out:
        for row in data["rows"]:
            for candidate in row["head"]:
                candidate["text"] = data["texts"][candidate["text"]]
            out.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    packing = verbs.add_parser("pack")
    for name in ("pairs", "inputs", "out"):
        packing.add_argument(name, type=Path)
    unpacking = verbs.add_parser("unpack")
    for name in ("packed", "work"):
        unpacking.add_argument(name, type=Path)
    args = parser.parse_args()
    if args.verb == "pack":
        pack(args.pairs, args.inputs, args.out)
    else:
        unpack(args.packed, args.work)


if __name__ == "__main__":
    main()
