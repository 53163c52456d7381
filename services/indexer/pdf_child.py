"""The child process of ``services.indexer.loaders.extract_pdf``: the PDF's bytes on stdin, the
outcome as JSON on stdout (``pages`` and ``title``, or ``skipped`` or ``failed`` with the reason).
It imports pypdf and nothing of the project's heavier modules, so that starting it costs little."""

from __future__ import annotations

import io
import json
import resource
import sys

CHILD_MEMORY_BYTES = 4 * 1024**3


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


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    json.dump(read_pdf(sys.stdin.buffer.read(), int(sys.argv[1])), sys.stdout)


if __name__ == "__main__":
    main()
