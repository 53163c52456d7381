"""A PDF reader in a process of its own, stopped when one PDF takes too long.

pypdf's work on one page can grow with the square of the text the page holds (a 52 KB page of
compressed ``Tj`` operators extracts to 24 M characters in four minutes), and it cannot be
interrupted from outside: a thread cannot be stopped, and a signal reaches only the main thread. So
the extraction runs in ``python -m shared.pdf_child``, one long-lived process per process that reads
PDFs (the indexer's, and the gateway's for a cited page; started once, not once per PDF), fed one
PDF at a time. A PDF whose outcome has not come back within its time limit gets the reader killed
(:class:`ReadTooLongError`); the next PDF starts a new one, and its time limit starts once that
reader says it is ready (Python and pypdf take seconds to start on a busy machine). The reader
checks the text limit itself and its address space is capped; a reader that dies (out of memory) is
:class:`ReaderDiedError`.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from typing import IO

from shared.pdf_child import FRAME, LENGTH, READY

# A long-lived reader is replaced after this many PDFs, so what pypdf keeps between calls cannot grow.
PDFS_PER_READER = 500
# Seconds a new reader may take to say it is ready (Python and pypdf imported), apart from any PDF's
# time limit; one that takes longer is taken for dead.
READER_START_S = 60.0
READER_COMMAND = (sys.executable, "-m", "shared.pdf_child")


class ReadTooLongError(TimeoutError):
    """The PDF took longer than its time limit; the reader was killed."""


class ReaderDiedError(RuntimeError):
    """The reader exited while reading the PDF (its memory cap, or a crash)."""


class PdfReaderProcess:
    """The reader process and the lock that gives it one PDF at a time."""

    def __init__(self, command: tuple[str, ...] = READER_COMMAND) -> None:
        self._lock = threading.Lock()
        self._command = command
        self._process: subprocess.Popen[bytes] | None = None
        self._served = 0

    def read(self, raw: bytes, max_chars: int, time_limit_s: float) -> bytes:
        """The outcome's JSON for ``raw``, within ``time_limit_s`` seconds of handing it to a ready
        reader (a reader started for it first has :data:`READER_START_S` to get ready)."""
        with self._lock:
            try:
                requests, answers = self._running()
                requests.write(FRAME.pack(max_chars, len(raw)) + raw)
                requests.flush()
                deadline = time.monotonic() + time_limit_s
                (size,) = LENGTH.unpack(read_by(answers.fileno(), LENGTH.size, deadline))
                answer = read_by(answers.fileno(), size, deadline)
            except (ReadTooLongError, ReaderDiedError, OSError):
                self._stop()
                raise
            self._served += 1
            return answer

    def _running(self) -> tuple[IO[bytes], IO[bytes]]:
        """The reader's stdin and stdout, started anew when it exited or served its share."""
        worn = self._served >= PDFS_PER_READER
        if self._process is not None and (self._process.poll() is not None or worn):
            self._stop()
        if self._process is None:
            self._process = subprocess.Popen(
                self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
            self._served = 0
            if self._process.stdout is not None:
                await_ready(self._process.stdout.fileno())
        if self._process.stdin is None or self._process.stdout is None:
            raise ReaderDiedError
        return self._process.stdin, self._process.stdout

    def close(self) -> None:
        """Stop the reader process; the next read starts a new one."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            for pipe in (self._process.stdin, self._process.stdout):
                if pipe is not None:
                    pipe.close()
            self._process = None


def await_ready(descriptor: int) -> None:
    """Return once a new reader said :data:`READY` on ``descriptor``; :class:`ReaderDiedError` when it
    exits first or stays silent for :data:`READER_START_S` seconds."""
    try:
        said = read_by(descriptor, len(READY), time.monotonic() + READER_START_S)
    except ReadTooLongError as exc:
        raise ReaderDiedError(f"the PDF reader did not start within {READER_START_S:g}s") from exc
    if said != READY:
        raise ReaderDiedError("the PDF reader did not start")


def read_by(descriptor: int, size: int, deadline: float) -> bytes:
    """``size`` bytes from ``descriptor`` before ``deadline`` (``time.monotonic``)."""
    data = bytearray()
    while len(data) < size:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([descriptor], [], [], remaining)[0]:
            raise ReadTooLongError
        chunk = os.read(descriptor, size - len(data))
        if not chunk:
            raise ReaderDiedError
        data += chunk
    return bytes(data)


READER = PdfReaderProcess()
