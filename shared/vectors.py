"""Vectors that carry no meaning, refused by every embedder and every store.

A module of its own, needing only numpy, so the embedder (which provisioning runs in the model-building
image stage, with only the files it needs) can refuse them without the store contracts.
"""

from __future__ import annotations

import numpy as np


class DegenerateVectorsError(RuntimeError):
    """Vectors that carry no meaning: all zero, or with a NaN or an infinity. Stored, they would be
    found (or never found) as if they meant something, so every embedder and every store refuses
    them."""


def refuse_degenerate(vectors: np.ndarray, source: str) -> np.ndarray:
    """``vectors`` (one row per text) unchanged when every row is finite and not all zero; otherwise
    :class:`DegenerateVectorsError` naming ``source`` and the first offending rows."""
    rows = np.asarray(vectors).reshape(len(vectors), -1)
    degenerate = np.flatnonzero(~np.isfinite(rows).all(axis=1) | ~rows.any(axis=1))
    if degenerate.size:
        raise DegenerateVectorsError(
            f"{source} gave {degenerate.size} all-zero or non-finite vector(s) of {len(rows)} "
            f"(rows {degenerate.tolist()[:5]}); they are not stored"
        )
    return vectors
