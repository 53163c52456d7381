"""An in-memory stand-in of the Weaviate client's collections, for the Weaviate store's tests.

A Weaviate server cannot run on this machine, so this plays the part of Weaviate 1.28 behind the
official client's collection API as ``WeaviateStore`` uses it: objects upserted by UUID with
``insert_many`` (a batch: an existing UUID is replaced), filters evaluated from the client's own
filter objects (equal, greater/less or equal, contains any, like), ``near_vector`` by cosine
distance, ``bm25`` scored as the server scores it (:func:`bm25f`), ``fetch_objects`` (with offset
and vectors), ``delete_many``, the iterator and the count. Like the server's HNSW index, a
collection takes the length of its first vector as its own: a write of another length is rejected
per object and a query of another length raises the client's ``WeaviateQueryError``, each with the
server's message. It also records its writes and deletes, so tests can check how the store writes.
What it cannot show is the rest of the server (HNSW recall, float32 rounding of scores).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from types import SimpleNamespace
from typing import Any

import numpy as np
from weaviate.classes.data import DataObject
from weaviate.collections.classes.filters import _FilterAnd, _FilterOr, _Filters, _FilterValue
from weaviate.exceptions import WeaviateInsertManyAllFailedError, WeaviateQueryError

WORD = re.compile(r"[^\W_]+")  # Weaviate's word tokenization: runs of letters and digits, lowercased
K1, B = 1.2, 0.75
# Weaviate's "en" stopword preset (adapters/repos/db/inverted/stopwords/presets.go), the default:
# removed from the query, still indexed and counted in a property's length.
STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
        "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
        "this", "to", "was", "will", "with",
    }
)  # fmt: skip


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


def bm25f(query: str, query_properties: list[str], objects: list[dict[str, Any]]) -> list[float]:
    """Each object's score as Weaviate 1.28 computes it (``inverted/bm25_searcher.go``).

    One BM25F over the properties together, not a sum of per-property BM25s: per query term (its
    stopwords dropped, a repeated term counted once with its idf multiplied by the repeats), a
    document's frequency is the sum over the properties holding the term of ``boost x count`` and its
    length the sum of those properties' lengths; the length is normalised by the mean over the
    queried properties of each property's mean length; ``tf = f / (f + k1 (1 - b + b len / avg))``
    (no ``k1 + 1`` factor) times ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``, with ``N`` every
    object of the collection and ``n`` those holding the term in any queried property (``objects``
    is the whole collection: a filter only drops scores afterwards).
    """
    boosts = {
        name.split("^")[0]: float(name.split("^")[1]) if "^" in name else 1.0 for name in query_properties
    }
    fields = [
        {name: words(props.get(name)) for name in boosts if props.get(name) is not None} for props in objects
    ]
    average = sum(mean_length(fields, name) for name in boosts) / len(boosts)
    repeats = Counter(term for term in words(query) if term not in STOPWORDS)
    scores = [0.0] * len(objects)
    for term, repeat in repeats.items():
        holding = [[name for name, tokens in held.items() if term in tokens] for held in fields]
        idf = math.log(1 + (len(objects) - sum(map(bool, holding)) + 0.5) / (sum(map(bool, holding)) + 0.5))
        for index, names in enumerate(holding):
            frequency = sum(boosts[name] * fields[index][name].count(term) for name in names)
            length = sum(len(fields[index][name]) for name in names)
            if frequency:
                scores[index] += repeat * idf * frequency / (frequency + K1 * (1 - B + B * length / average))
    return scores


def mean_length(fields: list[dict[str, list[str]]], name: str) -> float:
    """A property's mean length in words over the objects that hold it (Weaviate's length tracker)."""
    lengths = [len(held[name]) for held in fields if name in held]
    return sum(lengths) / len(lengths) if lengths else 0.0


class StandInCollection:
    """One collection: objects by UUID, each with its properties and vector."""

    def __init__(self, description: str | None = None) -> None:
        self.objects: dict[str, tuple[dict[str, Any], list[float] | None]] = {}
        self.description = description
        self.dimension: int | None = None  # the length of the first vector written, as HNSW fixes it
        self.inserts: list[int] = []  # the number of objects of each insert_many, in order
        self.deletes: list[_Filters] = []  # each delete_many's filter, in order
        self.data = SimpleNamespace(insert_many=self._insert_many, delete_many=self._delete_many)
        self.query = SimpleNamespace(
            near_vector=self._near_vector, bm25=self._bm25, fetch_objects=self._fetch
        )
        self.aggregate = SimpleNamespace(over_all=self._over_all)
        self.config = SimpleNamespace(
            get=lambda simple=False: SimpleNamespace(description=self.description),
            update=lambda description: setattr(self, "description", description),
        )

    def _insert_many(self, objects: list[DataObject]) -> Any:
        self.inserts.append(len(objects))
        errors = {}
        for index, obj in enumerate(objects):
            vector = None if obj.vector is None else list(obj.vector)  # type: ignore[arg-type]
            if vector is not None and self.dimension not in (None, len(vector)):
                errors[index] = SimpleNamespace(
                    message=f"Validate vector index for {obj.uuid}: new node has a vector with length "
                    f"{len(vector)}. Existing nodes have vectors with length {self.dimension}",
                    original_uuid=obj.uuid,
                )
                continue
            if vector is not None and self.dimension is None:
                self.dimension = len(vector)
            self.objects[str(obj.uuid)] = (dict(obj.properties or {}), vector)
        if errors and len(errors) == len(objects):  # the client raises when every object failed
            reasons = "\n".join({error.message for error in errors.values()})
            raise WeaviateInsertManyAllFailedError(f"Here is the set of all errors: {reasons}")
        return SimpleNamespace(has_errors=bool(errors), errors=errors)

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
        if self.dimension is not None and len(near_vector) != self.dimension:
            raise WeaviateQueryError(
                f"vector lengths don't match: {len(near_vector)} vs {self.dimension}", "GRPC search"
            )
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
        everything = [props for props, _ in self.objects.values()]
        scores = bm25f(query, query_properties, everything)
        found = [
            (props, SimpleNamespace(distance=None, score=score))
            for props, score in zip(everything, scores, strict=True)
            if score > 0 and matches(filters, props)
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
                properties=dict(p), metadata=SimpleNamespace(), vector=as_returned(v, include_vector)
            )
            for p, v in found[:limit]
        ]
        return SimpleNamespace(objects=objects)

    def _over_all(self, total_count: bool) -> Any:
        return SimpleNamespace(total_count=len(self.objects))

    def iterator(
        self, include_vector: bool = False, return_properties: list[str] | None = None
    ) -> Iterator[Any]:
        for uuid, (props, vector) in list(self.objects.items()):
            names = list(props) if return_properties is None else return_properties
            yield SimpleNamespace(
                uuid=uuid,
                properties={name: props.get(name) for name in names},
                vector=as_returned(vector, include_vector),
            )


def as_returned(vector: list[float] | None, included: bool) -> dict[str, list[float]]:
    """An object's vectors as the client returns them: the unnamed one as ``default``, none when the
    object has none or they were not asked for."""
    return {"default": vector} if included and vector is not None else {}


class StandInClient:
    """``client.collections`` with ``exists``, ``create``, ``get`` and ``delete``; ``close`` does
    nothing."""

    def __init__(self) -> None:
        self.by_name: dict[str, StandInCollection] = {}
        self.collections = SimpleNamespace(
            exists=lambda name: name in self.by_name,
            create=lambda **config: self.by_name.setdefault(
                config["name"], StandInCollection(config.get("description"))
            ),
            get=lambda name: self.by_name[name],
            delete=self._delete,
        )

    def _delete(self, names: str | list[str]) -> None:
        for name in [names] if isinstance(names, str) else names:
            self.by_name.pop(name, None)

    def close(self) -> None:
        return None
