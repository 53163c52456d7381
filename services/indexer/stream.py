"""Index batches of files with loading, embedding and store writes overlapped.

Three stages run at once, joined by bounded queues:

1. a *preparing* thread loads and chunks the files, batch after batch, at most
   ``index_prepare_ahead`` files ahead of the embedder;
2. the calling thread hands the embedder calls of about ``index_embed_tokens`` tokens (estimated),
   filled across files and across batches, so every call but the job's last is full; a file too big
   for one call is split across calls, and after each call ``on_chunks`` hears how many of its
   chunks are embedded (a 260 kB file takes tens of seconds: its progress must move meanwhile);
3. a *writing* thread writes each batch, in order, once all its chunks have vectors: one store write
   per batch (plus a delete per file that could not be read and that the store's manifest holds: a
   document with chunks always has its manifest row, but for the orphans of a crashed write, which
   the store's repair deletes when it opens), and with it the store's occasional
   compaction, while the embedder goes on with the next batch.

A batch's outcome is its per-file results, or the backend error (embedder or store) that stopped it:
an embedder call that fails fails every batch it held chunks of, and nothing of those batches is
written. Files that cannot be read are results, not errors (``load_file``).
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from shared.contracts import Chunk, Document, IndexFileResult, IndexFileTask
from shared.interfaces import Embedder, VectorStore
from shared.settings import IndexingSettings

BatchOutcome = list[IndexFileResult] | Exception
# Called after each embedder call with a file split across calls: the file, its chunks embedded, its chunks.
ChunkProgress = Callable[[IndexFileTask, int, int], None]
# Characters per token when sizing embedder calls (English prose is ~4; the embedder truncates at 256).
CHARS_PER_TOKEN = 4
MAX_PASSAGE_TOKENS = 256
_POLL_S = 0.1
T = TypeVar("T")


def passage_tokens(passage: str) -> int:
    """Estimated tokens of a passage as the embedder will see it (truncated)."""
    return min(MAX_PASSAGE_TOKENS, len(passage) // CHARS_PER_TOKEN + 2)


@dataclass
class PreparedFile:
    """A file loaded and chunked, ready to embed; or, with no document, why it is not indexed."""

    task: IndexFileTask
    result: IndexFileResult
    document: Document | None = None
    chunks: list[Chunk] = field(default_factory=list)
    passages: list[str] = field(default_factory=list)
    vectors: np.ndarray | None = None

    @property
    def tokens(self) -> int:
        """Estimated tokens of its passages, as the embedder will see them (truncated)."""
        return sum(map(passage_tokens, self.passages))


@dataclass
class _Batch:
    number: int
    files: list[PreparedFile] = field(default_factory=list)
    closed: bool = False  # all its files are prepared
    waiting: int = 0  # files whose vectors are not back yet
    error: Exception | None = None

    @property
    def ready(self) -> bool:
        return self.closed and (self.waiting == 0 or self.error is not None)


@dataclass
class _End:
    """Marks the end of a batch in the prepared queue."""

    batch: int


class _Stopped(Exception):
    """The consumer went away; a stage stops early."""


def _put(target: queue.Queue[T], item: T, stop: threading.Event) -> None:
    while True:
        if stop.is_set():
            raise _Stopped
        try:
            target.put(item, timeout=_POLL_S)
            return
        except queue.Full:
            continue


def index_batches(
    batches: Sequence[Sequence[IndexFileTask]],
    prepare: Callable[[IndexFileTask], PreparedFile],
    store: VectorStore,
    embedder: Embedder,
    settings: IndexingSettings,
    on_chunks: ChunkProgress | None = None,
) -> list[BatchOutcome]:
    """Index the batches with the three stages overlapped (module doc); one outcome per batch, in
    order. ``prepare`` loads and chunks one file (it reports bad input as a result, never raises for
    it); an unexpected error in it or in this code propagates, after the stages stopped."""
    prepared: queue.Queue[PreparedFile | _End | BaseException | None] = queue.Queue(
        max(1, settings.index_prepare_ahead)
    )
    writes: queue.Queue[_Batch | None] = queue.Queue(2)
    outcomes: list[BatchOutcome | None] = [None] * len(batches)
    stop = threading.Event()

    def prepare_all() -> None:
        try:
            for number, tasks in enumerate(batches):
                for task in tasks:
                    _put(prepared, prepare(task), stop)
                _put(prepared, _End(number), stop)
            _put(prepared, None, stop)
        except _Stopped:
            return
        except BaseException as exc:  # a bug, not bad input: the embedding stage re-raises it
            with contextlib.suppress(_Stopped):
                _put(prepared, exc, stop)

    def write_all() -> None:
        for batch in iter(writes.get, None):
            try:
                outcomes[batch.number] = _write(batch, store)
            except Exception as exc:  # a bug: the batch fails, and the thread goes on taking batches
                outcomes[batch.number] = exc

    preparer = threading.Thread(target=prepare_all, name="index-prepare", daemon=True)
    writer = threading.Thread(target=write_all, name="index-write", daemon=True)
    preparer.start()
    writer.start()
    try:
        _embed_all(prepared, writes, Embedding(embedder, settings.index_embed_tokens, on_chunks), stop)
    finally:
        stop.set()
        writes.put(None)
        writer.join()
        preparer.join()
    return [outcome if outcome is not None else RuntimeError("batch not written") for outcome in outcomes]


@dataclass
class Embedding:
    """The embedder, the tokens of one call, and who hears of a big file's chunks embedded."""

    embedder: Embedder
    budget: int
    on_chunks: ChunkProgress | None = None

    def calls(self, passages: list[tuple[PreparedFile, str]]) -> Iterator[list[tuple[PreparedFile, str]]]:
        """The passages in calls of at least ``budget`` tokens; a rest under ``budget`` joins the call
        before it, so the calls of files that fit in one stay whole."""
        sizes = [passage_tokens(passage) for _, passage in passages]
        start, tokens, left = 0, 0, sum(sizes)
        for end, size in enumerate(sizes, 1):
            tokens, left = tokens + size, left - size
            if tokens >= self.budget and left >= self.budget:
                yield passages[start:end]
                start, tokens = end, 0
        if start < len(passages):
            yield passages[start:]

    def vectors(self, files: list[PreparedFile]) -> np.ndarray:
        """The vectors of the files' passages, in order; a file split across calls is reported after
        each call that embedded some of its chunks."""
        calls = list(self.calls([(file, passage) for file in files for passage in file.passages]))
        cut = itertools.pairwise(calls)  # a file whose passages end one call and begin the next
        split = {id(after[0][0]) for before, after in cut if before[-1][0] is after[0][0]}
        parts, embedded = [], dict.fromkeys(split, 0)
        for call in calls:
            parts.append(self.embedder.embed_documents([passage for _, passage in call]))
            reported = {id(file): file for file, _ in call if id(file) in split}
            for file in reported.values():
                embedded[id(file)] += sum(1 for f, _ in call if f is file)
                if self.on_chunks is not None:
                    self.on_chunks(file.task, embedded[id(file)], len(file.passages))
        return np.concatenate(parts)


def _embed_all(
    prepared: queue.Queue[PreparedFile | _End | BaseException | None],
    writes: queue.Queue[_Batch | None],
    embedding: Embedding,
    stop: threading.Event,
) -> None:
    """Fill embedder calls from the prepared files; pass each batch on, in order, once it is ready."""
    open_batches: list[_Batch] = [_Batch(0)]
    pending: list[tuple[_Batch, PreparedFile]] = []
    pending_tokens = 0

    def pass_on_ready() -> None:
        while open_batches and open_batches[0].ready:
            _put(writes, open_batches.pop(0), stop)

    while True:
        item = prepared.get()
        if item is None:
            break
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, _End):
            open_batches[-1].closed = True
            open_batches.append(_Batch(item.batch + 1))
        else:
            batch = open_batches[-1]
            batch.files.append(item)
            if item.passages:
                batch.waiting += 1
                pending.append((batch, item))
                pending_tokens += item.tokens
        if pending_tokens >= embedding.budget:
            _embed(pending, embedding)
            pending, pending_tokens = [], 0
        pass_on_ready()
    _embed(pending, embedding)
    open_batches.pop()  # the empty batch opened after the last one
    pass_on_ready()


def _embed(pending: list[tuple[_Batch, PreparedFile]], embedding: Embedding) -> None:
    """Embed the pending files' passages (in one call, unless a file is too big for one); an error
    fails every batch they belong to."""
    live = [(batch, file) for batch, file in pending if batch.error is None]
    for batch, _ in pending:
        if batch.error is not None:
            batch.waiting -= 1
    if not live:
        return
    try:
        vectors = embedding.vectors([file for _, file in live])
    except Exception as exc:  # a backend error: the batches it touched fail, the Celery edge retries
        for batch, _ in live:
            batch.error = batch.error or exc
            batch.waiting -= 1
        return
    start = 0
    for batch, file in live:
        file.vectors = vectors[start : start + len(file.passages)]
        start += len(file.passages)
        batch.waiting -= 1


def _write(batch: _Batch, store: VectorStore) -> BatchOutcome:
    """The batch's one store write (and the deletes of its unreadable files), or why it failed."""
    if batch.error is not None:
        return batch.error
    try:
        unindexed = [file.task for file in batch.files if file.document is None]
        if unindexed:
            # Only what the store holds is deleted: most unreadable files were never indexed, and a
            # delete is a store write (a version, and a compaction every few dozen).
            held = {entry.document_id for entry in store.manifest(unindexed[0].root).values()}
            for task in unindexed:
                if task.document_id in held:
                    store.delete_document(task.document_id)
        indexed = [file for file in batch.files if file.document is not None]
        if indexed:
            store.replace_documents(
                [file.document for file in indexed if file.document is not None],
                [chunk for file in indexed for chunk in file.chunks],
                _stacked(file.vectors for file in indexed),
            )
    except Exception as exc:  # a backend error: the Celery edge retries the batch
        return exc
    return [file.result for file in batch.files]


def _stacked(parts: Iterable[np.ndarray | None]) -> np.ndarray:
    arrays = [part for part in parts if part is not None and len(part)]
    return np.concatenate(arrays) if arrays else np.zeros((0, 0), dtype=np.float32)
