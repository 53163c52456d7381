"""The PDF reader's own process (``shared.pdf_reader`` starts it and talks to it): PDFs
arrive on stdin, each outcome leaves as JSON on stdout (``pages`` and ``title``, or ``skipped`` or
``failed`` with the reason). It imports pypdf and nothing of the project's heavier modules."""

from __future__ import annotations

import io
import json
import resource
import struct
import sys
from typing import BinaryIO

CHILD_MEMORY_BYTES = 4 * 1024**3
FRAME = struct.Struct(">QQ")
LENGTH = struct.Struct(">Q")
# Written once, when pypdf is imported and the first PDF may come: the reader's start is not a PDF's
# time (Python and pypdf take a second or more to start on a busy machine).
READY = b"ready\n"


class TextLimitError(ValueError):
    pass


def read_pdf(raw: bytes, max_chars: int) -> dict[str, object]:
    """The pages' text and the title; refused as soon as the text pypdf hands over passes ``max_chars``."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    chars = 0

    def count(text: str, *_: object) -> None:
        nonlocal chars
        chars += len(text)
        if chars > max_chars:
            raise TextLimitError(
                f"extracts to over {max_chars:,} characters of text (HINDSIGHT_MAX_DOCUMENT_CHARS)"
            )

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted:
            reader.decrypt("")
        pages = [page.extract_text(visitor_text=count) or "" for page in reader.pages]
        info = reader.metadata
    except FileNotDecryptedError:
        return {"failed": "encrypted PDF: it needs a password to open"}
    except TextLimitError as exc:
        return {"skipped": str(exc)}
    except Exception as exc:  # a damaged file can break the parser anywhere; all of it means "corrupt"
        return {"failed": f"corrupt PDF: {type(exc).__name__}: {exc}"}
    return {"pages": pages, "title": str(info.title) if info is not None and info.title else None}


def read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def main() -> None:
    """Say :data:`READY` once pypdf is imported, then serve requests until stdin ends: each is
    ``>QQ`` (the text limit, the PDF's length) and the PDF's bytes; each answer is ``>Q`` (its
    length) and the outcome's JSON."""
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    import pypdf  # noqa: F401  (imported before READY, so no PDF's time limit pays for it)

    answers.write(READY)
    answers.flush()
    while (header := read_exactly(requests, FRAME.size)) is not None:
        max_chars, size = FRAME.unpack(header)
        raw = read_exactly(requests, size)
        if raw is None:
            return
        outcome = json.dumps(read_pdf(raw, max_chars)).encode()
        answers.write(LENGTH.pack(len(outcome)) + outcome)
        answers.flush()


if __name__ == "__main__":
    main()
