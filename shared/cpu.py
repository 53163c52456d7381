"""How many cores this process may use: thread counts for ONNX Runtime and llama.cpp derive from it."""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may run on (respects CPU affinity and container limits)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
