"""``per_distinct``: a computation over repeated items runs once per distinct item, and every item
gets its own row back, in order."""

from __future__ import annotations

import numpy as np

from shared.distinct import per_distinct


def test_repeated_items_are_computed_once_and_every_item_gets_its_row_in_order() -> None:
    calls: list[list[str]] = []

    def lengths(items: list[str]) -> np.ndarray:
        calls.append(items)
        return np.array([len(item) for item in items])

    rows = per_distinct(["bb", "a", "bb", "ccc", "a"], lengths)

    assert calls == [["bb", "a", "ccc"]]
    assert rows.tolist() == [2, 1, 2, 3, 1]
