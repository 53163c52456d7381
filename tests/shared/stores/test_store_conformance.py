"""One behaviour for every vector store: the same tests run against LanceDB (on disk), against the
Weaviate adapter with its server played by ``weaviate_standin`` (a Weaviate server cannot run here),
and against a real Weaviate server when ``HINDSIGHT_TEST_WEAVIATE_URL`` names one (gRPC on
``HINDSIGHT_TEST_WEAVIATE_GRPC_PORT``, default 50051; each test gets collections of its own, deleted
after it). Without it those runs are skipped with that reason (docs/stores.md).

What the pipeline relies on: replacing a document leaves exactly its new chunks and manifest row,
whatever was there and however often it is written, with its centroid; deletes remove both; searches
rank, filter and limit inside the store; neighbours are fetched by ordinal; vectors of another length
or without meaning are refused with the store's own error.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from shared.contracts import Chunk, Document, SearchFilters, SourceKind
from shared.interfaces import VectorStore, VectorStoreError
from shared.settings import StorageSettings
from shared.stores.lancedb_store import LanceDBStore
from shared.stores.weaviate_store import DOCUMENT_SUFFIX, WeaviateStore, connect
from shared.vectors import DegenerateVectorsError
from tests.shared.stores.weaviate_standin import StandInClient

DIMENSION = 8
REAL_WEAVIATE = os.environ.get("HINDSIGHT_TEST_WEAVIATE_URL")


@pytest.fixture(params=["lancedb", "weaviate-standin", "weaviate-server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    if request.param == "lancedb":
        yield LanceDBStore(tmp_path / "store", DIMENSION)
    elif request.param == "weaviate-standin":
        yield WeaviateStore(StandInClient(), "Conformance")
    else:
        yield from real_weaviate_store()


def real_weaviate_store() -> Iterator[WeaviateStore]:
    """A store on the real server named by ``HINDSIGHT_TEST_WEAVIATE_URL``, in collections of its own."""
    if not REAL_WEAVIATE:
        pytest.skip("no real Weaviate: set HINDSIGHT_TEST_WEAVIATE_URL (and _GRPC_PORT) to run against one")
    grpc_port = int(os.environ.get("HINDSIGHT_TEST_WEAVIATE_GRPC_PORT", "50051"))
    client = connect(StorageSettings(weaviate_url=REAL_WEAVIATE, weaviate_grpc_port=grpc_port))
    name = f"Conformance{uuid.uuid4().hex}"
    try:
        yield WeaviateStore(client, name)
    finally:
        client.collections.delete([name, name + DOCUMENT_SUFFIX])
        client.close()


def axis(index: int) -> np.ndarray:
    """A unit vector along one axis: a chunk's vector that no other chunk's resembles."""
    vector = np.zeros(DIMENSION, dtype=np.float32)
    vector[index] = 1.0
    return vector


def document(name: str, *, content_hash: str = "h1", kind: SourceKind = SourceKind.MARKDOWN) -> Document:
    return Document(
        id=f"doc-{name}",
        source_uri=f"/notes/{name}.md",
        kind=kind,
        title=name.title(),
        content_hash=content_hash,
    )


def chunks_of(
    doc: Document, texts: list[str], *, space: str | None = None, date: datetime | None = None
) -> list[Chunk]:
    chunks, start = [], 0
    for ordinal, text in enumerate(texts):
        chunks.append(
            Chunk(
                id=f"{doc.id}:{ordinal}",
                document_id=doc.id,
                ordinal=ordinal,
                text=text,
                heading_path=[doc.title, "Section"],
                page=None,
                char_start=start,
                char_end=start + len(text),
                title=doc.title,
                source_uri=doc.source_uri,
                kind=doc.kind,
                space=space,
                document_date=date,
            )
        )
        start += len(text) + 1
    return chunks


def vectors(first_axis: int, count: int) -> np.ndarray:
    return np.stack([axis(first_axis + i) for i in range(count)]) if count else np.zeros((0, DIMENSION))


def write(store: VectorStore, doc: Document, chunks: list[Chunk], first_axis: int = 0) -> None:
    store.replace_documents([doc], chunks, vectors(first_axis, len(chunks)))
    store.refresh_indexes()


BREAD = ["Sourdough starter feeding schedule", "Rye flour hydration notes", "Oven spring and scoring"]


def test_a_replace_stores_the_chunks_exactly_and_records_the_document_in_the_manifest(
    store: VectorStore,
) -> None:
    doc = document("bread")
    thread_facts = {
        "body_start": 21,
        "source_url": "https://www.perplexity.ai/search/bread-abc",
        "turn_question": "How is the starter fed?",
    }
    chunks = [
        chunk.model_copy(update=thread_facts)
        for chunk in chunks_of(doc, BREAD, space="Baking", date=datetime(2024, 5, 1, tzinfo=UTC))
    ]
    write(store, doc, chunks)
    assert store.count_chunks() == 3
    assert store.document_chunks(doc.id, [0, 1, 2]) == chunks
    entry = store.manifest()[doc.source_uri]
    assert (entry.document_id, entry.content_hash, entry.chunk_count) == (doc.id, "h1", 3)


def test_a_shorter_new_version_leaves_only_its_own_chunks_and_writing_it_again_changes_nothing(
    store: VectorStore,
) -> None:
    doc = document("bread")
    write(store, doc, chunks_of(doc, BREAD))
    shorter = document("bread", content_hash="h2")
    new_chunks = chunks_of(shorter, ["Sourdough starter, revised"])
    for _ in range(2):
        write(store, shorter, new_chunks, first_axis=5)
    assert store.count_chunks() == 1
    assert store.document_chunks(doc.id, [0, 1, 2]) == new_chunks
    assert store.manifest()[doc.source_uri].content_hash == "h2"


def test_a_batch_replaces_several_documents_and_one_without_chunks_is_recorded_empty(
    store: VectorStore,
) -> None:
    bread, empty, tea = document("bread"), document("empty"), document("tea")
    chunks = chunks_of(bread, BREAD[:2]) + chunks_of(tea, ["Green tea steeping temperature"])
    store.replace_documents([bread, empty, tea], chunks, vectors(0, 3))
    manifest = store.manifest()
    assert {uri: e.chunk_count for uri, e in manifest.items()} == {
        bread.source_uri: 2,
        empty.source_uri: 0,
        tea.source_uri: 1,
    }
    assert store.count_chunks() == 3


def test_a_replace_refuses_chunks_of_an_unlisted_document_and_a_document_listed_twice(
    store: VectorStore,
) -> None:
    bread, tea = document("bread"), document("tea")
    with pytest.raises(ValueError, match="belongs to no document"):
        store.replace_documents([bread], chunks_of(tea, ["x"]), vectors(0, 1))
    with pytest.raises(ValueError, match="listed twice"):
        store.replace_documents([bread, bread], [], vectors(0, 0))
    assert store.count_chunks() == 0 and store.manifest() == {}


def test_a_deleted_document_leaves_neither_chunks_nor_manifest_row(store: VectorStore) -> None:
    bread, tea = document("bread"), document("tea")
    write(store, bread, chunks_of(bread, BREAD))
    write(store, tea, chunks_of(tea, ["Green tea steeping temperature"]), first_axis=3)
    store.delete_document(bread.id)
    assert list(store.manifest()) == [tea.source_uri]
    assert store.count_chunks() == 1 and store.document_chunks(bread.id, [0, 1, 2]) == []


def test_the_manifest_under_a_root_holds_only_files_inside_that_folder(store: VectorStore) -> None:
    inside = document("bread")
    sibling = inside.model_copy(update={"id": "doc-sibling", "source_uri": "/notes-old/bread.md"})
    store.replace_documents([inside, sibling], [], vectors(0, 0))
    assert list(store.manifest("/notes")) == [inside.source_uri]
    assert list(store.manifest("/notes/")) == [inside.source_uri]
    assert len(store.manifest()) == 2


def test_dense_search_ranks_the_nearest_vector_first_with_the_highest_score(store: VectorStore) -> None:
    doc = document("bread")
    write(store, doc, chunks_of(doc, BREAD))
    query = axis(1) + 0.2 * axis(2)
    hits = store.dense_search(query, limit=2)
    assert [h.chunk.ordinal for h in hits] == [1, 2]
    assert hits[0].score > hits[1].score and hits[0].score == pytest.approx(
        1 / np.linalg.norm(query), abs=1e-3
    )


def test_keyword_search_finds_a_word_of_the_text_or_the_title_and_nothing_for_a_blank_query(
    store: VectorStore,
) -> None:
    bread, tea = document("bread"), document("tea")
    write(store, bread, chunks_of(bread, BREAD))
    write(store, tea, chunks_of(tea, ["Green tea steeping temperature"]), first_axis=3)
    assert [h.chunk.id for h in store.keyword_search("hydration", 5)] == [f"{bread.id}:1"]
    assert {h.chunk.document_id for h in store.keyword_search("tea", 5)} == {tea.id}
    assert store.keyword_search("   ", 5) == []


def test_keyword_count_counts_what_keyword_search_finds_up_to_its_limit(store: VectorStore) -> None:
    bread, notes = document("bread"), document("notes")
    write(store, bread, chunks_of(bread, BREAD))
    write(store, notes, chunks_of(notes, [f"Sourdough notes, day {n}" for n in range(5)]), first_axis=3)
    for word in ("sourdough", "hydration", "teapot"):
        for limit in (1, 3, 50):
            assert store.keyword_count(word, limit) == len(store.keyword_search(word, limit)), (word, limit)
    assert (store.keyword_count("sourdough", 50), store.keyword_count("sourdough", 4)) == (6, 4)
    assert store.keyword_count("  ", 5) == 0


def test_filters_apply_inside_both_searches(store: VectorStore) -> None:
    bread = document("bread")
    paper = document("paper", kind=SourceKind.PDF)
    bread_chunks = chunks_of(bread, ["Flour notes for baking"], space="Baking", date=datetime(2023, 3, 1))
    paper_chunks = chunks_of(paper, ["Flour milling study"], space="Research", date=datetime(2025, 3, 1))
    store.replace_documents([bread, paper], bread_chunks + paper_chunks, vectors(0, 2))
    store.refresh_indexes()
    everything = np.ones(DIMENSION, dtype=np.float32)
    cases = {
        bread.id: [
            SearchFilters(kinds=[SourceKind.MARKDOWN]),
            SearchFilters(spaces=["Baking"]),
            SearchFilters(path_prefix="/notes/bread"),
            SearchFilters(date_to=datetime(2024, 1, 1, tzinfo=UTC)),
        ],
        paper.id: [
            SearchFilters(kinds=[SourceKind.PDF]),
            SearchFilters(date_from=datetime(2024, 1, 1, tzinfo=UTC)),
        ],
    }
    for expected, filters in cases.items():
        for only in filters:
            assert {h.chunk.document_id for h in store.dense_search(everything, 5, only)} == {expected}, only
            assert {h.chunk.document_id for h in store.keyword_search("flour", 5, only)} == {expected}, only
    assert store.dense_search(everything, 5, SearchFilters(spaces=["Nowhere"])) == []


def test_neighbours_are_fetched_by_ordinal_in_order_and_only_those_asked(store: VectorStore) -> None:
    doc = document("bread")
    write(store, doc, chunks_of(doc, BREAD))
    assert [c.ordinal for c in store.document_chunks(doc.id, [2, 0, 7])] == [0, 2]
    assert store.document_chunks(doc.id, []) == []


def test_a_document_centroid_is_the_unit_mean_of_its_own_chunks_vectors(store: VectorStore) -> None:
    bread, cake = document("bread"), document("cake")
    write(store, bread, chunks_of(bread, BREAD), first_axis=0)  # axes 0, 1, 2
    write(store, cake, chunks_of(cake, ["Sponge", "Icing"]), first_axis=5)  # axes 5, 6
    found = store.document_centroids([cake.id, bread.id, "doc-missing", bread.id])
    assert set(found) == {bread.id, cake.id}, "a document without chunks is left out"
    np.testing.assert_allclose(found[bread.id], np.array([1, 1, 1, 0, 0, 0, 0, 0]) / np.sqrt(3), atol=1e-6)
    np.testing.assert_allclose(found[cake.id], np.array([0, 0, 0, 0, 0, 1, 1, 0]) / np.sqrt(2), atol=1e-6)
    assert store.document_centroids([]) == {}


def test_a_centroid_counts_every_chunk_of_a_document_longer_than_one_fetch(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shared.stores.weaviate_store.FETCH_PAGE", 2)  # Weaviate fetches in pages
    doc = document("bread")
    store.replace_documents(
        [doc], chunks_of(doc, ["a", "b", "c", "d", "e"]), np.stack([axis(0)] * 4 + [axis(1)])
    )
    store.refresh_indexes()
    expected = np.array([4, 1, 0, 0, 0, 0, 0, 0]) / np.sqrt(17)
    np.testing.assert_allclose(store.document_centroids([doc.id])[doc.id], expected, atol=1e-6)


def test_whole_documents_are_read_in_ordinal_order_across_fetches(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shared.stores.weaviate_store.FETCH_PAGE", 2)  # Weaviate fetches in pages
    bread, cake, other = document("bread"), document("cake"), document("other")
    write(store, bread, chunks_of(bread, BREAD), first_axis=0)
    write(store, cake, chunks_of(cake, ["Sponge", "Icing"]), first_axis=3)
    write(store, other, chunks_of(other, ["Not asked for"]), first_axis=5)
    found = store.documents_chunks([cake.id, bread.id, "doc-missing"])
    assert set(found) == {bread.id, cake.id}, "a document without chunks is left out"
    assert found[bread.id] == chunks_of(bread, BREAD) and found[cake.id] == chunks_of(
        cake, ["Sponge", "Icing"]
    )
    assert store.documents_chunks([]) == {}


def test_a_centroid_follows_its_document_through_replaces_and_deletes(store: VectorStore) -> None:
    bread, cake = document("bread"), document("cake")
    write(store, bread, chunks_of(bread, BREAD), first_axis=0)
    write(store, cake, chunks_of(cake, ["Sponge"]), first_axis=5)
    write(store, bread, chunks_of(bread, ["Rye only"]), first_axis=3)  # a new version: one chunk
    found = store.document_centroids([bread.id, cake.id])
    np.testing.assert_allclose(found[bread.id], axis(3), atol=1e-6)
    write(store, bread, [], first_axis=0)  # a version without chunks has no centroid
    assert set(store.document_centroids([bread.id, cake.id])) == {cake.id}
    store.delete_document(cake.id)
    assert store.document_centroids([bread.id, cake.id]) == {}


def test_a_vector_of_another_length_is_refused_on_write_and_on_query_with_the_stores_error(
    store: VectorStore,
) -> None:
    doc = document("bread")
    write(store, doc, chunks_of(doc, BREAD))
    other = document("other")
    with pytest.raises(VectorStoreError):
        store.replace_documents([other], chunks_of(other, ["Too short"]), np.ones((1, DIMENSION - 3)))
    with pytest.raises(VectorStoreError):
        store.dense_search(np.ones(DIMENSION - 3, dtype=np.float32), 5)
    assert store.count_chunks() == 3 and other.source_uri not in store.manifest()


@pytest.mark.parametrize("bad", [0.0, np.nan, np.inf], ids=["zero", "nan", "inf"])
def test_degenerate_vectors_are_refused_on_write_and_on_query(store: VectorStore, bad: float) -> None:
    doc = document("bread")
    rows = vectors(0, 3)
    rows[1] = bad
    with pytest.raises(DegenerateVectorsError, match="rows \\[1\\]"):
        store.replace_documents([doc], chunks_of(doc, BREAD), rows)
    with pytest.raises(DegenerateVectorsError):
        store.dense_search(np.full(DIMENSION, bad, dtype=np.float32), 5)
    assert store.count_chunks() == 0 and store.manifest() == {}


def test_clear_leaves_an_empty_store_that_takes_new_writes(store: VectorStore) -> None:
    bread = document("bread")
    write(store, bread, chunks_of(bread, BREAD))
    store.clear()
    assert store.count_chunks() == 0 and store.manifest() == {} and store.document_centroids([bread.id]) == {}
    write(store, bread, chunks_of(bread, BREAD[:1]))
    assert store.count_chunks() == 1 and [h.chunk.ordinal for h in store.keyword_search("sourdough", 5)] == [
        0
    ]
