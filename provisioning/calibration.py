"""Fixed inputs that provisioning checks quantised models on and measures smoothing factors with.

The check set and the fit set are disjoint, so a check measures what the quantiser did not see.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from shared.onnx_runtime import load_tokenizer

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
    smoothing factors are measured on (``provisioning.row_int8``)."""
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


# Every fit question against every fit text: what the stand-in's head is fitted on and per-row
# int8's smoothing is measured on for the cross-encoder.
FIT_QUESTION_TEXT_PAIRS = [(question, text) for question, _ in FIT_PAIRS for text in FIT_TEXTS]
