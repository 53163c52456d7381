"""Work done once per distinct item: a library holds the same text in several places (an answer
copied into two threads, a file in two folders), and a question's candidates bring the copies
together (a third of them at 100k chunks, ``bench/library_scale.py``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T", bound=Hashable)


def per_distinct(items: Sequence[T], compute: Callable[[list[T]], np.ndarray]) -> np.ndarray:
    """``compute``'s rows for ``items``, one per item in order, with ``compute`` called once over the
    distinct items (first occurrences, in order). Only for a computation whose row for an item
    depends on that item alone."""
    distinct = list(dict.fromkeys(items))
    rows = compute(distinct)
    position = {item: index for index, item in enumerate(distinct)}
    return rows[[position[item] for item in items]]
