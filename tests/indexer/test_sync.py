"""Incremental sync against the real LanceDB store and the real ONNX embedder, and every bad input.

Each test indexes a small temporary tree in-process (``sync_root``, the same ``begin_scan`` /
``plan_batches`` / ``index_batch`` the Celery tasks run) and then checks what the store holds.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import lancedb
import numpy as np
import pytest

from services.indexer.manifest_diff import document_id_for
from services.indexer.pipeline import begin_scan, index_batch, plan_batches, sync_root
from shared.contracts import Chunk, Document, IndexFileTask, IndexRequest, ScanReport
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import CHUNKS, LanceDBStore
from tests.indexer.documents import ARTICLE_HTML, write_pdf


class CountingEmbedder:
    """The real embedder, counting its calls and how many passages it was asked to embed; it raises
    (as a backend that is down would) for any call holding ``poison``."""

    def __init__(self, inner: OnnxEmbedder, poison: str | None = None) -> None:
        self.inner, self.embedded, self.calls, self.poison = inner, 0, 0, poison
        self.name, self.dimension = inner.name, inner.dimension

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.poison and any(self.poison in text for text in texts):
            raise ConnectionError(f"embedder refused a batch holding {self.poison}")
        self.embedded += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return self.inner.token_spans(text)


def sync(root: Path, store: object, embedder: object, settings: Settings) -> ScanReport:
    return sync_root(
        IndexRequest(job_id="test", root=str(root)), store, embedder, settings.indexing, settings.data_dir
    )  # type: ignore[arg-type]


def long_note(topic: str, paragraphs: int) -> str:
    body = "\n\n".join(f"Paragraph {i} about {topic} and its practical details." for i in range(paragraphs))
    return f"# {topic.title()}\n\n{body}\n"


def chunk_ordinals(store: LanceDBStore, path: Path) -> list[int]:
    return [c.ordinal for c in store.document_chunks(document_id_for(str(path)), list(range(200)))]


def test_add_change_delete_and_unchanged(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    counting = CountingEmbedder(embedder)
    (docs / "a.md").write_text(long_note("sourdough", 12))
    (docs / "b.txt").write_text("Trip to Lisbon in May.\n")
    (docs / "sub").mkdir()
    (docs / "sub" / "c.md").write_text(long_note("rye bread", 3))
    first = sync(docs, store, counting, settings)
    assert (first.scanned, first.new, first.failed) == (3, 3, 0)
    assert first.chunks == store.count_chunks() == counting.embedded
    a_chunks = chunk_ordinals(store, docs / "a.md")
    assert len(a_chunks) > 2

    counting.embedded = 0
    again = sync(docs, store, counting, settings)
    assert (again.unchanged, again.new, again.changed, again.deleted, again.chunks) == (3, 0, 0, 0, 0)
    assert counting.embedded == 0

    (docs / "a.md").write_text(long_note("sourdough", 2))
    (docs / "sub" / "c.md").unlink()
    (docs / "d.md").write_text("# New\n\nA brand new note about focaccia.\n")
    after = sync(docs, store, counting, settings)
    assert (after.new, after.changed, after.unchanged, after.deleted) == (1, 1, 1, 1)
    assert counting.embedded == after.chunks
    assert chunk_ordinals(store, docs / "a.md") == list(range(len(chunk_ordinals(store, docs / "a.md"))))
    assert len(chunk_ordinals(store, docs / "a.md")) < len(a_chunks)
    assert chunk_ordinals(store, docs / "sub" / "c.md") == []
    manifest = store.manifest(str(docs))
    assert sorted(Path(uri).name for uri in manifest) == ["a.md", "b.txt", "d.md"]
    assert sum(entry.chunk_count for entry in manifest.values()) == store.count_chunks()
    texts = [hit.chunk.text for hit in store.keyword_search("Paragraph 7", 10)]
    assert not any("Paragraph 7" in t for t in texts), "stale chunks of the longer version remain"


def test_chunks_carry_page_heading_path_and_exact_spans(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    write_pdf(docs / "paper.pdf", ["Starters need flour and water. " * 12, "Rye ferments fast. " * 12])
    (docs / "page.html").write_text(ARTICLE_HTML)
    report = sync(docs, store, embedder, settings)
    assert report.failed == 0 and report.new == 2
    pdf_chunks = store.document_chunks(document_id_for(str(docs / "paper.pdf")), list(range(50)))
    assert {c.page for c in pdf_chunks} == {1, 2}
    assert all(("Rye" in c.text) == (c.page == 2) for c in pdf_chunks)
    html_chunks = store.document_chunks(document_id_for(str(docs / "page.html")), list(range(50)))
    assert any(c.heading_path[-1:] == ["Batching the pairs"] for c in html_chunks)
    assert all(c.char_end - c.char_start == len(c.text) for c in html_chunks)


def test_every_bad_input_gets_a_reason_and_the_rest_is_indexed(
    tmp_path: Path, docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (docs / "good.md").write_text("# Good\n\nThis note is fine and must be indexed.\n")
    (docs / "corrupt.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf")
    write_pdf(docs / "encrypted.pdf", ["secret"], user_password="pw")
    (docs / "empty.md").touch()
    (docs / "latin1.txt").write_bytes("naïve".encode("latin-1"))
    with (docs / "huge.txt").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    (docs / "binary.md").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50)
    (docs / "loop-a.md").symlink_to(docs / "loop-b.md")
    (docs / "loop-b.md").symlink_to(docs / "loop-a.md")
    (docs / "parent-loop").symlink_to(docs)
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nnot under the configured roots\n")
    (docs / "escape.md").symlink_to(outside)
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n")

    report = sync(docs, store, embedder, settings)

    reasons = {Path(r.path).name: r.reason or "" for r in [*report.failures, *report.skipped_files]}
    assert "corrupt PDF" in reasons["corrupt.pdf"]
    assert "encrypted PDF" in reasons["encrypted.pdf"]
    assert "empty file" in reasons["empty.md"]
    assert "above the 2.0 MB limit" in reasons["huge.txt"]
    assert "binary content" in reasons["binary.md"]
    assert reasons["loop-a.md"] == reasons["loop-b.md"] == "symlink loop"
    assert "not followed" in reasons["parent-loop"]
    assert "outside the configured roots" in reasons["escape.md"]
    assert "unsupported file type .png" in reasons["photo.png"]
    assert {Path(r.path).name for r in report.failures} == {"corrupt.pdf", "encrypted.pdf"}
    assert report.failed == 2 and report.skipped == len(report.skipped_files) == 8
    assert report.new == 4, "skipped files are refused at the scan, never queued as new"
    assert sorted(Path(uri).name for uri in store.manifest(str(docs))) == ["good.md", "latin1.txt"]
    assert store.count_chunks() == report.chunks >= 1


def test_a_scan_of_a_folder_outside_the_roots_is_refused(
    tmp_path: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "note.md").write_text("# Private\n\nnot to be indexed\n")
    report = sync(elsewhere, store, embedder, settings)
    assert report.failed == 1 and "outside the configured roots" in (report.failures[0].reason or "")
    assert store.count_chunks() == 0


def test_a_file_edited_between_scan_and_indexing_is_stored_with_the_hash_of_the_bytes_indexed(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    note = docs / "note.txt"
    note.write_text("The kefir grains were fed on Monday.\n")
    _, work = begin_scan(
        IndexRequest(job_id="edit", root=str(docs)), store, settings.indexing, settings.data_dir
    )
    edited = b"The kefir grains were fed on Tuesday, with whole milk.\n"
    note.write_bytes(edited)

    index_batch(work, store, embedder, settings.indexing, settings.data_dir)

    (entry,) = store.manifest(str(docs)).values()
    assert entry.content_hash == hashlib.sha256(edited).hexdigest() != work[0].content_hash
    assert "Tuesday" in store.document_chunks(entry.document_id, [0])[0].text
    report, again = begin_scan(
        IndexRequest(job_id="next", root=str(docs)), store, settings.indexing, settings.data_dir
    )
    assert (report.unchanged, report.changed, again) == (1, 0, []), "the hash describes what is indexed"


def test_a_library_indexed_before_body_offsets_were_stored_opens_and_indexes_its_markdown_again(
    docs: Path, settings: Settings, embedder: OnnxEmbedder
) -> None:
    thread = docs / "thread.md"
    thread.write_text("---\ntitle: Kefir\n---\n# Kefir\n\nThe grains were fed on Monday.\n")
    (docs / "plain.txt").write_text("Plain text has no front matter.\n")
    sync(docs, LanceDBStore(settings.store_dir, embedder.dimension), embedder, settings)
    lancedb.connect(str(settings.store_dir)).open_table(CHUNKS).drop_columns(["body_start"])  # as before

    store = LanceDBStore(settings.store_dir, embedder.dimension)
    (chunk,) = store.document_chunks(document_id_for(str(thread)), [0])
    assert chunk.body_start == 0, "an old row reads, as 0"
    report = sync(docs, store, embedder, settings)

    assert (report.changed, report.unchanged) == (1, 1), "its Markdown is indexed again, nothing else"
    (chunk,) = store.document_chunks(document_id_for(str(thread)), [0])
    assert chunk.body_start == len("---\ntitle: Kefir\n---\n")


THREAD_URL = "https://www.perplexity.ai/search/kefir-grains-abc123"


def test_a_threads_perplexity_address_reaches_its_chunks_and_another_sites_address_does_not(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (docs / "thread.md").write_text(f"---\ntitle: Kefir\nurl: {THREAD_URL}\n---\n# Kefir\n\nFed on Monday.\n")
    planted = "---\ntitle: Rye\nurl: https://www.perplexity.ai.evil.example/s\n---\n# Rye\n\nProofed.\n"
    (docs / "planted.md").write_text(planted)
    sync(docs, store, embedder, settings)

    (thread,) = store.document_chunks(document_id_for(str(docs / "thread.md")), [0])
    (other,) = store.document_chunks(document_id_for(str(docs / "planted.md")), [0])
    assert thread.source_url == THREAD_URL
    assert other.source_url is None, "a front matter url on another site is not a thread's address"


def test_a_library_indexed_before_thread_addresses_were_stored_reads_none_and_indexes_markdown_again(
    docs: Path, settings: Settings, embedder: OnnxEmbedder
) -> None:
    thread = docs / "thread.md"
    thread.write_text(f"---\ntitle: Kefir\nurl: {THREAD_URL}\n---\n# Kefir\n\nFed on Monday.\n")
    (docs / "plain.txt").write_text("Plain text has no front matter.\n")
    sync(docs, LanceDBStore(settings.store_dir, embedder.dimension), embedder, settings)
    lancedb.connect(str(settings.store_dir)).open_table(CHUNKS).drop_columns(["source_url"])  # as before

    store = LanceDBStore(settings.store_dir, embedder.dimension)
    (chunk,) = store.document_chunks(document_id_for(str(thread)), [0])
    assert chunk.source_url is None, "an old row reads, without an address"
    report = sync(docs, store, embedder, settings)

    assert (report.changed, report.unchanged) == (1, 1), "its Markdown is indexed again, nothing else"
    (chunk,) = store.document_chunks(document_id_for(str(thread)), [0])
    assert chunk.source_url == THREAD_URL


THREAD = (
    '---\ntitle: "Kefir"\nsource: "perplexity"\n---\n# Kefir\n\n## How often are the grains fed?\n\n'
    "### Feeding\n\nThe grains were fed on Monday.\n\n## And what with?\n\nWhole milk, a cup at a time.\n"
)


def test_each_chunk_of_a_thread_stores_its_turns_question_and_a_notes_chunks_none(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (docs / "thread.md").write_text(THREAD)
    (docs / "note.md").write_text(THREAD.replace('source: "perplexity"\n', ""))
    sync(docs, store, embedder, settings)

    def questions(name: str) -> dict[str, str | None]:
        chunks = store.document_chunks(document_id_for(str(docs / name)), list(range(5)))
        return {chunk.text.splitlines()[-1]: chunk.turn_question for chunk in chunks}

    assert questions("thread.md") == {
        "# Kefir": None,
        "## How often are the grains fed?": "How often are the grains fed?",
        "The grains were fed on Monday.": "How often are the grains fed?",
        "Whole milk, a cup at a time.": "And what with?",
    }, "an answer's own heading (### Feeding) is not its turn's question"
    assert set(questions("note.md").values()) == {None}, "a note's ## heading is not a question asked"


def test_a_library_indexed_before_turn_questions_were_stored_reads_none_and_embeds_nothing_again(
    docs: Path, settings: Settings, embedder: OnnxEmbedder
) -> None:
    (docs / "thread.md").write_text(THREAD)
    sync(docs, LanceDBStore(settings.store_dir, embedder.dimension), embedder, settings)
    lancedb.connect(str(settings.store_dir)).open_table(CHUNKS).drop_columns(["turn_question"])  # as before

    store = LanceDBStore(settings.store_dir, embedder.dimension)
    chunks = store.document_chunks(document_id_for(str(docs / "thread.md")), list(range(5)))
    assert {chunk.turn_question for chunk in chunks} == {None}, "old rows read, without one"
    report = sync(docs, store, embedder, settings)
    assert (report.changed, report.unchanged) == (0, 1), "a missing label is no reason to embed again"


def test_a_file_that_turns_bad_loses_its_old_chunks(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    note = write_pdf(docs / "note.pdf", ["Original readable content about kefir."])
    sync(docs, store, embedder, settings)
    assert store.count_chunks() == 1
    note.write_bytes(b"%PDF-1.4\nkefir, no longer a PDF")
    report = sync(docs, store, embedder, settings)
    assert report.changed == 1 and report.failed == 1
    assert store.count_chunks() == 0 and store.manifest(str(docs)) == {}
    os.remove(note)
    assert sync(docs, store, embedder, settings).deleted == 0


def file_task(name: str, size: int) -> IndexFileTask:
    return IndexFileTask(
        job_id="j", root="/r", path=f"/r/{name}", document_id=name, content_hash="h", size_bytes=size
    )


def test_batches_are_bounded_by_file_count_and_bytes_and_a_big_file_goes_alone(settings: Settings) -> None:
    by_count = settings.replace(index_batch_files=2, index_batch_bytes=1_000)
    work = [file_task(f"f{i}", 10) for i in range(5)]
    assert [[t.path[3:] for t in b.files] for b in plan_batches(work, by_count.indexing)] == [
        ["f0", "f1"], ["f2", "f3"], ["f4"],
    ]  # fmt: skip
    by_bytes = settings.replace(index_batch_files=10, index_batch_bytes=12)
    sizes = [6, 6, 6, 20, 1, 5]
    work = [file_task(f"f{i}", size) for i, size in enumerate(sizes)]
    assert [[t.size_bytes for t in b.files] for b in plan_batches(work, by_bytes.indexing)] == [
        [6, 6],
        [6],
        [20],
        [1, 5],
    ]
    assert plan_batches([], settings.indexing) == []


class CountingStore:
    """The real store, counting its batch writes."""

    def __init__(self, inner: LanceDBStore) -> None:
        self.inner, self.writes = inner, 0

    def replace_documents(self, documents: list[Document], chunks: list[Chunk], vectors: np.ndarray) -> None:
        self.writes += 1
        self.inner.replace_documents(documents, chunks, vectors)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_a_scan_fills_embedder_calls_across_batches_writes_once_per_batch_and_a_bad_file_fails_alone(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    counting, writes = CountingEmbedder(embedder), CountingStore(store)
    for i in range(5):
        (docs / f"note-{i}.md").write_text(long_note(f"topic {i}", 4))
    (docs / "note-2b.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf")
    three_per_batch = settings.replace(index_batch_files=3)
    report = sync(docs, writes, counting, three_per_batch)
    assert (report.new, report.failed) == (6, 1)
    assert Path(report.failures[0].path).name == "note-2b.pdf"
    assert "corrupt PDF" in (report.failures[0].reason or "")
    assert counting.calls == 1, "the chunks of both batches fit one call of the token budget"
    assert writes.writes == 2, "six files in batches of three: one store write per batch"
    manifest = store.manifest(str(docs))
    assert sorted(Path(uri).name for uri in manifest) == [f"note-{i}.md" for i in range(5)]
    assert report.chunks == counting.embedded == store.count_chunks()
    assert all(entry.chunk_count == len(chunk_ordinals(store, Path(uri))) for uri, entry in manifest.items())


def test_embedder_calls_reach_the_token_budget_before_they_run(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    sizes: list[int] = []

    class Sizing(CountingEmbedder):
        def embed_documents(self, texts: list[str]) -> np.ndarray:
            sizes.append(sum(min(256, len(text) // 4 + 2) for text in texts))
            return super().embed_documents(texts)

    for i in range(6):
        (docs / f"note-{i}.md").write_text(long_note(f"topic {i}", 5))
    budget = settings.replace(index_batch_files=2, index_embed_tokens=120)
    report = sync(docs, store, Sizing(embedder), budget)
    assert report.new == 6 and report.chunks == store.count_chunks()
    assert len(sizes) > 1 and all(size >= 120 for size in sizes[:-1]), sizes


def test_a_file_too_big_for_one_embedder_call_is_split_and_each_call_reports_its_chunks_embedded(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (docs / "big.md").write_text(long_note("sourdough", 60))
    (docs / "small.md").write_text(long_note("rye", 1))
    counting, heard = CountingEmbedder(embedder), []
    small_calls = settings.replace(index_embed_tokens=120)
    _, tasks = begin_scan(
        IndexRequest(job_id="test", root=str(docs)), store, small_calls.indexing, small_calls.data_dir
    )

    def embedded(task: IndexFileTask, done: int, chunks: int) -> None:
        heard.append((Path(task.path).name, done, chunks))

    results = {
        Path(r.path).name: r
        for r in index_batch(tasks, store, counting, small_calls.indexing, small_calls.data_dir, embedded)
    }
    big = results["big.md"].chunks
    assert counting.calls > 2 and [name for name, _, _ in heard] == ["big.md"] * len(heard), heard
    done = [count for _, count, _ in heard]
    assert done == sorted(set(done)) and done[-1] == big and {c for _, _, c in heard} == {big}
    assert counting.embedded == big + results["small.md"].chunks == store.count_chunks()


def test_a_batch_the_backend_rejects_is_indexed_file_by_file_and_only_the_culprit_fails(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (docs / "a.md").write_text(long_note("bread a", 3))
    (docs / "b.md").write_text(long_note("POISON bread", 3))
    (docs / "c.md").write_text(long_note("bread c", 3))
    poisoned = CountingEmbedder(embedder, poison="POISON")
    report = sync(docs, store, poisoned, settings)
    assert poisoned.calls == 1 + 3, "the whole batch once, then each file alone"
    assert report.failed == 1 and Path(report.failures[0].path).name == "b.md"
    assert report.failures[0].reason == "ConnectionError: embedder refused a batch holding POISON"
    assert sorted(Path(uri).name for uri in store.manifest(str(docs))) == ["a.md", "c.md"]
    assert store.count_chunks() == report.chunks == poisoned.embedded


def test_a_store_write_that_fails_in_the_writing_thread_sends_the_batch_file_by_file(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    class RejectingStore(CountingStore):
        def replace_documents(
            self, documents: list[Document], chunks: list[Chunk], vectors: np.ndarray
        ) -> None:
            if any(chunk.title == "Poison" for chunk in chunks):
                raise OSError("disk refused the write")
            super().replace_documents(documents, chunks, vectors)

    for name in ("a", "b", "c", "d"):
        (docs / f"{name}.md").write_text(long_note("poison" if name == "c" else f"bread {name}", 3))
    two_per_batch = settings.replace(index_batch_files=2)
    report = sync(docs, RejectingStore(store), embedder, two_per_batch)
    assert report.failed == 1 and Path(report.failures[0].path).name == "c.md"
    assert report.failures[0].reason == "OSError: disk refused the write"
    assert sorted(Path(uri).name for uri in store.manifest(str(docs))) == ["a.md", "b.md", "d.md"]
    assert store.count_chunks() == report.chunks


def test_reindexing_and_rerunning_a_batch_keep_chunk_counts_exact(
    docs: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    for i in range(4):
        (docs / f"n{i}.md").write_text(long_note(f"rye {i}", 6))
    sync(docs, store, embedder, settings)
    kept = sum(
        e.chunk_count for uri, e in store.manifest(str(docs)).items() if Path(uri).name in ("n2.md", "n3.md")
    )
    (docs / "n0.md").write_text(long_note("rye 0", 2))
    (docs / "n1.md").write_text(long_note("rye 1", 12))
    report, work = begin_scan(
        IndexRequest(job_id="again", root=str(docs)), store, settings.indexing, settings.data_dir
    )
    assert (report.changed, len(work)) == (2, 2)
    once = index_batch(work, store, embedder, settings.indexing, settings.data_dir)
    after_once = store.count_chunks()
    twice = index_batch(
        work, store, embedder, settings.indexing, settings.data_dir
    )  # a redelivered batch writes the same rows
    assert once == twice and store.count_chunks() == after_once
    manifest = store.manifest(str(docs))
    assert after_once == sum(entry.chunk_count for entry in manifest.values())
    assert after_once == kept + sum(r.chunks for r in once)
    for name in ("n0.md", "n1.md"):
        ordinals = chunk_ordinals(store, docs / name)
        assert ordinals == list(range(manifest[str(docs / name)].chunk_count))


def test_pdfs_and_html_indexed_under_older_extraction_rules_are_extracted_again_text_files_are_not(
    docs: Path,
    store: LanceDBStore,
    embedder: OnnxEmbedder,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_pdf(docs / "paper.pdf", ["Starters need flour and water. " * 12, "Rye ferments fast. " * 12])
    (docs / "page.html").write_text(ARTICLE_HTML)
    (docs / "note.md").write_text(long_note("sourdough", 3))
    assert sync(docs, store, embedder, settings).new == 3
    monkeypatch.setattr("services.indexer.manifest_diff.EXTRACTION_VERSION", "next")
    again = sync(docs, store, embedder, settings)
    assert (again.changed, again.unchanged) == (2, 1)
    assert sync(docs, store, embedder, settings).unchanged == 3
