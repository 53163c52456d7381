"""Micro-batching across questions: batcher threads merge waiting pairs into batches.

The rerank worker runs Celery with ``--pool threads --concurrency N``: up to N rerank
tasks wait in one process, each handing its pairs to this batcher and blocking on a future.
A batcher thread takes pairs first come first served until it has ``batch_size`` of them or
the oldest has waited ``max_wait_s``, scores them in one call, and hands every question exactly
its own logits back. Only the batcher threads call the scorer, so N concurrent tasks never
oversubscribe the cores with N sets of intra-op threads.

With ``batches_in_flight=2`` a second thread forms and tokenises the next batch while the first
waits for its batch's last runs, so the scorer's cores never idle between batches (a scorer whose
logits do not depend on batch neighbours gives the same answers either way).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from shared.distinct import per_distinct

ScorePairs = Callable[[list[tuple[str, str]]], np.ndarray]


@dataclass
class _Request:
    """One question's pairs and the logits filled in as their batches finish."""

    pairs: list[tuple[str, str]]
    future: Future[np.ndarray] = field(default_factory=Future)
    logits: np.ndarray = field(init=False)
    remaining: int = field(init=False)

    def __post_init__(self) -> None:
        self.logits = np.zeros(len(self.pairs), dtype=np.float32)
        self.remaining = len(self.pairs)


class MicroBatcher:
    """Merge the pairs of concurrent questions into batches; a daemon thread does the scoring."""

    def __init__(
        self,
        score_pairs: ScorePairs,
        batch_size: int = 64,
        max_wait_s: float = 0.01,
        batches_in_flight: int = 1,
    ) -> None:
        self._score_pairs = score_pairs
        self.batch_size = batch_size
        self.max_wait_s = max_wait_s
        self._pending: deque[tuple[_Request, int, float]] = deque()
        self._ready = threading.Condition()
        self._results = threading.Lock()
        self.batches_scored = 0
        for number in range(batches_in_flight):
            threading.Thread(target=self._serve, name=f"rerank-batcher-{number}", daemon=True).start()

    def submit(self, pairs: list[tuple[str, str]]) -> Future[np.ndarray]:
        """A future of the raw logits of ``pairs``, in their order."""
        request = _Request(pairs)
        if not pairs:
            request.future.set_result(request.logits)
            return request.future
        now = time.monotonic()
        with self._ready:
            self._pending.extend((request, index, now) for index in range(len(pairs)))
            self._ready.notify()
        return request.future

    def score(self, question: str, passages: list[str]) -> np.ndarray:
        """The logits of ``question`` with each passage, in order. A passage given more than once is
        scored once: a pair's logit is a function of the pair alone (``cross_encoder``), and a
        library holds the same text in several places (a copied answer, a file in two folders): of
        a question's 35 candidates, 16 % were repeats on a 10k-chunk documentation library, 31 %
        at 100k chunks (``bench/library_scale.py``)."""
        return per_distinct(passages, lambda unique: self.submit([(question, p) for p in unique]).result())

    def _take_batch(self) -> list[tuple[_Request, int, float]]:
        """Wait for a first pair, then for a full batch or the oldest pair's deadline."""
        with self._ready:
            while not self._pending:
                self._ready.wait()
            deadline = self._pending[0][2] + self.max_wait_s
            while len(self._pending) < self.batch_size and (left := deadline - time.monotonic()) > 0:
                self._ready.wait(left)
            count = min(self.batch_size, len(self._pending))
            return [self._pending.popleft() for _ in range(count)]

    def _serve(self) -> None:
        while True:
            batch = self._take_batch()
            try:
                logits = self._score_pairs([request.pairs[index] for request, index, _ in batch])
            except Exception as exc:
                self._fail(list({id(request): request for request, _, _ in batch}.values()), exc)
                continue
            with self._results:
                self.batches_scored += 1
                for (request, index, _), logit in zip(batch, logits, strict=True):
                    request.logits[index] = logit
                    request.remaining -= 1
                    if request.remaining == 0:
                        request.future.set_result(request.logits)

    def _fail(self, requests: list[_Request], exc: Exception) -> None:
        """A failed batch fails its questions (and drops their other pairs), never the thread."""
        failed = {id(request) for request in requests}
        with self._results:
            for request in requests:
                if not request.future.done():
                    request.future.set_exception(exc)
        with self._ready:
            self._pending = deque(item for item in self._pending if id(item[0]) not in failed)
