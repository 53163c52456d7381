"""A PDF's text, extracted in a child process that is stopped at its time limit.

pypdf's work on one page can grow with the square of the text the page holds (a 52 KB page of
compressed ``Tj`` operators extracts to 24 M characters in four minutes), and it cannot be
interrupted from outside: a thread cannot be stopped, and a signal reaches only the main thread. So
the extraction runs in ``python -m services.indexer.pdf_child``: the PDF's bytes on its stdin, the
outcome as JSON on its stdout. The parent waits ``time_limit_s`` at most, then kills it and refuses
the file; the child checks the text limit itself as pypdf hands it each piece of text, and its address
space is capped (4 GB), so it cannot take the whole machine's memory either.
"""

from __future__ import annotations

import subprocess
import sys

from pydantic import BaseModel

from services.indexer.loaders import LoadError, SkippedFileError


class PdfText(BaseModel):
    """What the child found: the pages' text and the title, or why the file is skipped or failed."""

    pages: list[str] = []
    title: str | None = None
    skipped: str | None = None
    failed: str | None = None


def extract_pdf(raw: bytes, max_chars: int, time_limit_s: float) -> PdfText:
    """The PDF's pages and title; :class:`SkippedFileError` past ``max_chars`` characters or
    ``time_limit_s`` seconds, :class:`LoadError` when it is encrypted or corrupt."""
    command = [sys.executable, "-m", "services.indexer.pdf_child", str(max_chars)]
    try:
        done = subprocess.run(command, input=raw, capture_output=True, timeout=time_limit_s, check=False)
    except subprocess.TimeoutExpired as exc:
        reason = f"text extraction took over {time_limit_s:g}s (HINDSIGHT_PDF_TIME_LIMIT_S)"
        raise SkippedFileError(reason) from exc
    if done.returncode != 0:
        raise LoadError(f"the PDF reader stopped on it (exit status {done.returncode}; out of memory?)")
    outcome = PdfText.model_validate_json(done.stdout)
    if outcome.skipped:
        raise SkippedFileError(outcome.skipped)
    if outcome.failed:
        raise LoadError(outcome.failed)
    return outcome
