"""An in-memory stand-in of the Weaviate client's collections, for the Weaviate store's tests.

A Weaviate server cannot run on this machine, so this plays the part of the server behind the
official client's collection API as ``WeaviateStore`` uses it: objects upserted by UUID in batches,
filters evaluated from the client's own filter objects (equal, greater/less or equal, contains any,
like), ``near_vector`` by cosine distance, ``bm25`` scored with Weaviate's defaults (k1 1.2, b 0.75,
word tokenization, boosted properties), ``fetch_objects`` (with offset and vectors),
``delete_many``, the iterator and the count. It also records its batches and deletes, so tests can
check how the store writes. What it cannot show is the server's own behaviour (HNSW recall, its
exact BM25 numbers).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import numpy as np
from weaviate.collections.classes.filters import _FilterAnd, _FilterOr, _Filters, _FilterValue

WORD = re.compile(r"[^\W_]+")
K1, B = 1.2, 0.75


def matches(where: _Filters | None, properties: dict[str, Any]) -> bool:
    if where is None:
        return True
    if isinstance(where, _FilterAnd):
        return all(matches(part, properties) for part in where.filters)
    if isinstance(where, _FilterOr):
        return any(matches(part, properties) for part in where.filters)
    assert isinstance(where, _FilterValue) and isinstance(where.target, str), where
    return compare(properties.get(where.target), where.operator.value, where.value)


def compare(actual: Any, operator: str, wanted: Any) -> bool:
    if actual is None:
        return False
    if operator == "Equal":
        return bool(actual == wanted)
    if operator == "GreaterThanEqual":
        return bool(comparable(actual) >= comparable(wanted))
    if operator == "LessThanEqual":
        return bool(comparable(actual) <= comparable(wanted))
    if operator == "ContainsAny":
        values = actual if isinstance(actual, list) else [actual]
        return any(value in wanted for value in values)
    if operator == "Like":
        pattern = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in wanted)
        return re.fullmatch(pattern, str(actual)) is not None
    raise NotImplementedError(f"the stand-in has no {operator} filter")


def comparable(value: Any) -> Any:
    return value.timestamp() if isinstance(value, datetime) else value


def words(value: Any) -> list[str]:
    texts = value if isinstance(value, list) else [value or ""]
    return [word.lower() for text in texts for word in WORD.findall(str(text))]


class StandInCollection:
    """One collection: objects by UUID, each with its properties and vector."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[dict[str, Any], list[float] | None]] = {}
        self.batches = 0  # client batches opened
        self.deletes: list[_Filters] = []  # each delete_many's filter, in order
        self.batch = SimpleNamespace(fixed_size=self._fixed_size, failed_objects=[])
        self.data = SimpleNamespace(delete_many=self._delete_many)
        self.query = SimpleNamespace(
            near_vector=self._near_vector, bm25=self._bm25, fetch_objects=self._fetch
        )
        self.aggregate = SimpleNamespace(over_all=self._over_all)

    @contextmanager
    def _fixed_size(self, batch_size: int) -> Iterator[Any]:
        self.batches += 1

        def add_object(properties: dict[str, Any], uuid: str, vector: list[float] | None = None) -> None:
            self.objects[uuid] = (dict(properties), vector)

        yield SimpleNamespace(add_object=add_object)

    def _delete_many(self, where: _Filters) -> None:
        self.deletes.append(where)
        for uuid in [u for u, (props, _) in self.objects.items() if matches(where, props)]:
            del self.objects[uuid]

    def _found(self, pairs: list[tuple[dict[str, Any], SimpleNamespace]], limit: int | None) -> Any:
        return SimpleNamespace(
            objects=[SimpleNamespace(properties=dict(p), metadata=m) for p, m in pairs[:limit]]
        )

    def _near_vector(
        self, near_vector: list[float], limit: int, filters: _Filters | None = None, **_: Any
    ) -> Any:
        query = np.asarray(near_vector, dtype=np.float64)
        scored = []
        for props, vector in self.objects.values():
            if vector is None or not matches(filters, props):
                continue
            stored = np.asarray(vector, dtype=np.float64)
            cosine = float(query @ stored / (np.linalg.norm(query) * np.linalg.norm(stored)))
            scored.append((props, SimpleNamespace(distance=1.0 - cosine, score=None)))
        scored.sort(key=lambda pair: pair[1].distance)
        return self._found(scored, limit)

    def _bm25(
        self, query: str, query_properties: list[str], limit: int, filters: _Filters | None = None, **_: Any
    ) -> Any:
        boosts = {
            name.split("^")[0]: float(name.split("^")[1]) if "^" in name else 1.0 for name in query_properties
        }
        candidates = [props for props, _ in self.objects.values() if matches(filters, props)]
        terms = set(words(query))
        scores = [0.0] * len(candidates)
        for name, boost in boosts.items():
            fields = [words(props.get(name)) for props in candidates]
            average = sum(map(len, fields)) / max(1, len(fields)) or 1.0
            for term in terms:
                having = sum(term in field for field in fields)
                idf = math.log(1 + (len(fields) - having + 0.5) / (having + 0.5))
                for index, field in enumerate(fields):
                    tf = field.count(term)
                    norm = tf + K1 * (1 - B + B * len(field) / average)
                    scores[index] += boost * idf * tf * (K1 + 1) / norm if tf else 0.0
        found = [
            (props, SimpleNamespace(distance=None, score=score))
            for props, score in zip(candidates, scores, strict=True)
            if score > 0
        ]
        ranked = sorted(found, key=lambda pair: -pair[1].score)
        return self._found(ranked, limit)

    def _fetch(
        self,
        filters: _Filters | None = None,
        limit: int | None = None,
        offset: int = 0,
        include_vector: bool = False,
        **_: Any,
    ) -> Any:
        found = [(p, v) for p, v in self.objects.values() if matches(filters, p)][offset:]
        objects = [
            SimpleNamespace(
                properties=dict(p),
                metadata=SimpleNamespace(),
                vector={"default": v} if include_vector else {},
            )
            for p, v in found[:limit]
        ]
        return SimpleNamespace(objects=objects)

    def _over_all(self, total_count: bool) -> Any:
        return SimpleNamespace(total_count=len(self.objects))

    def iterator(self, return_properties: list[str]) -> Iterator[Any]:
        for props, _ in list(self.objects.values()):
            yield SimpleNamespace(properties={name: props.get(name) for name in return_properties})


class StandInClient:
    """``client.collections`` with ``exists``, ``create`` and ``get``; ``close`` does nothing."""

    def __init__(self) -> None:
        self.by_name: dict[str, StandInCollection] = {}
        self.collections = SimpleNamespace(
            exists=lambda name: name in self.by_name,
            create=lambda **config: self.by_name.setdefault(config["name"], StandInCollection()),
            get=lambda name: self.by_name[name],
        )

    def close(self) -> None:
        return None
