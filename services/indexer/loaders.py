"""Turn a file into text plus what a citation needs: title, metadata, and where each part came from.

Every loader returns the document's *extracted text*: the string whose character offsets chunks and
citations use. The file is read once: the bytes hashed are the bytes indexed (``content_hash``).
A Markdown or text file's text is its own, decoded as ``shared.source_text`` decodes it for every
later reader; a Markdown file's indexed text starts after its front matter, at ``body_start``
(stored with the chunks, so no later reader derives it again). PDFs also return a page-offset table,
so each offset maps back to its page. A file we cannot read is never guessed at:
:class:`SkippedFileError` (not a format we read) and :class:`LoadError` (a format we read, but this
file is broken) carry the reason the report shows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import yaml

from services.indexer.manifest_diff import content_digest
from services.indexer.text_titles import plain_text_title
from shared.contracts import SourceKind
from shared.extracted_text import PdfText, html_text, joined_pages, page_at, page_ranges, read_pdf
from shared.markdown_source import plain_inline, split_front_matter
from shared.pdf_reader import ReaderDiedError, ReadTooLongError
from shared.safe_files import FileTooLargeError, RefusedFileError, read_regular_file
from shared.source_text import UTF8, decode_source, kind_of

H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
SNIFF_BYTES = 8192


class SkippedFileError(ValueError):
    """Not something the indexer reads (unknown type, binary, empty, too large): reported, not read."""


class LoadError(ValueError):
    """A supported format that this file breaks (corrupt, encrypted)."""


@dataclass
class LoadedDocument:
    text: str
    title: str
    kind: SourceKind
    metadata: dict[str, str] = field(default_factory=dict)
    page_starts: list[int] = field(default_factory=list)
    body_start: int = 0
    content_hash: str = ""

    def page_at(self, offset: int) -> int | None:
        """The 1-based page holding character ``offset``, or ``None`` for unpaged documents."""
        return page_at(self.page_starts, offset)

    def page_ranges(self) -> list[tuple[int, int]]:
        """Character ranges of the pages (without the separators between them); none when unpaged."""
        return page_ranges(self.text, self.page_starts)


def kind_for(path: Path) -> SourceKind:
    kind = kind_of(path)
    if kind is None:
        raise SkippedFileError(f"unsupported file type {path.suffix or '(no extension)'}")
    return kind


def refused(exc: RefusedFileError) -> SkippedFileError:
    """A file the safe open refused, as the reason the report shows."""
    if isinstance(exc, FileTooLargeError):
        return SkippedFileError(f"{exc} (HINDSIGHT_MAX_FILE_BYTES)")
    return SkippedFileError(str(exc))


def read_source(path: Path, max_bytes: int, roots: Sequence[Path]) -> bytes:
    """The file's bytes through the safe open (a regular file under ``roots``, at most ``max_bytes``)."""
    try:
        raw = read_regular_file(path, max_bytes, roots)
    except RefusedFileError as exc:
        raise refused(exc) from exc
    if not raw:
        raise SkippedFileError("empty file (0 bytes)")
    return raw


def load_document(
    path: Path,
    max_bytes: int,
    roots: Sequence[Path] = (),
    max_chars: int = 5_000_000,
    pdf_time_limit_s: float = 30.0,
) -> LoadedDocument:
    """The document's extracted text and the SHA-256 of the bytes it came from; refused when it is
    over ``max_chars`` characters (or, for a PDF, takes over ``pdf_time_limit_s`` to extract)."""
    kind = kind_for(path)
    raw = read_source(path, max_bytes, roots)
    loaded = load_bytes(raw, path, kind, max_chars, pdf_time_limit_s)
    loaded.content_hash = content_digest(hashlib.sha256(raw).hexdigest(), kind)
    return loaded


def load_bytes(
    raw: bytes, path: Path, kind: SourceKind, max_chars: int, pdf_time_limit_s: float
) -> LoadedDocument:
    """The document of ``raw``, the bytes of ``path`` (a file of ``kind``)."""
    if kind is SourceKind.PDF:
        return load_pdf(raw, path, max_chars, pdf_time_limit_s)
    refuse_binary(raw, path)
    decoded = decode_source(raw)
    if kind is SourceKind.MARKDOWN:
        loaded = load_markdown(decoded.text, path)
    elif kind is SourceKind.HTML:
        loaded = load_html(decoded.text, path)
    else:
        loaded = LoadedDocument(text=decoded.text, title=plain_text_title(decoded.text, path), kind=kind)
    if decoded.encoding != UTF8:
        loaded.metadata["encoding"] = decoded.encoding
    if not loaded.text.strip():
        raise SkippedFileError("no text to index (only whitespace or markup)")
    check_text_length(len(loaded.text), max_chars)
    return loaded


def check_text_length(chars: int, max_chars: int) -> None:
    if chars > max_chars:
        raise SkippedFileError(
            f"extracts to over {max_chars:,} characters of text (HINDSIGHT_MAX_DOCUMENT_CHARS)"
        )


def refuse_binary(head: bytes, path: Path) -> None:
    """A NUL byte near the start means binary content, whatever the extension claims."""
    if b"\x00" in head[:SNIFF_BYTES]:
        raise SkippedFileError(f"binary content (NUL bytes) in a {path.suffix} file")


def sniff_text_file(path: Path, head: bytes) -> None:
    """Refuse a binary file behind a text extension (from its first bytes) before it is queued."""
    if kind_for(path) is not SourceKind.PDF:
        refuse_binary(head, path)


def metadata_value(value: object) -> str:
    """Front-matter values as strings; YAML dates become ISO 8601 so they parse back exactly."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def load_markdown(raw: str, path: Path) -> LoadedDocument:
    """Front matter (the exporter's title, uuid, space, url, created, updated) becomes metadata; the
    body without it is the text. Malformed front matter is dropped rather than indexed as prose."""
    metadata: dict[str, str] = {}
    front_matter, body_start = split_front_matter(raw)
    if front_matter is not None:
        try:
            parsed = yaml.safe_load(front_matter) or {}
        except yaml.YAMLError:
            parsed = {}
        if isinstance(parsed, dict):
            metadata = {str(k): metadata_value(v) for k, v in parsed.items() if v is not None}
    text = raw[body_start:]
    heading = H1.search(text)
    title = metadata.get("title") or (plain_inline(heading.group(1)) if heading else path.stem)
    return LoadedDocument(
        text=text, title=title, kind=SourceKind.MARKDOWN, metadata=metadata, body_start=body_start
    )


def load_html(raw: str, path: Path) -> LoadedDocument:
    """Main content as Markdown (headings and code fences survive, navigation and footers do not)."""
    import trafilatura

    text = html_text(raw)
    found = trafilatura.extract_metadata(raw)
    metadata = {}
    if found is not None:
        metadata = {
            key: str(value)
            for key, value in (("url", found.url), ("date", found.date), ("author", found.author))
            if value
        }
    title = (found.title if found is not None and found.title else None) or path.stem
    return LoadedDocument(text=text, title=title, kind=SourceKind.HTML, metadata=metadata)


def extract_pdf(raw: bytes, max_chars: int, time_limit_s: float) -> PdfText:
    """The PDF's pages and title; :class:`SkippedFileError` past ``max_chars`` characters or
    ``time_limit_s`` seconds, :class:`LoadError` when it is encrypted or corrupt.

    The PDF is read by the PDF reader process (``shared.pdf_reader``), killed
    at ``time_limit_s``: pypdf cannot be interrupted from inside, and one page of a 52 KB PDF can
    keep it busy for minutes."""
    try:
        outcome = read_pdf(raw, max_chars, time_limit_s)
    except ReadTooLongError as exc:
        reason = f"text extraction took over {time_limit_s:g}s (HINDSIGHT_PDF_TIME_LIMIT_S)"
        raise SkippedFileError(reason) from exc
    except (ReaderDiedError, OSError) as exc:
        raise LoadError("the PDF reader stopped on it (out of memory?)") from exc
    if outcome.skipped:
        raise SkippedFileError(outcome.skipped)
    if outcome.failed:
        raise LoadError(outcome.failed)
    return outcome


def load_pdf(raw: bytes, path: Path, max_chars: int, time_limit_s: float = 30.0) -> LoadedDocument:
    """Pages' text joined by blank lines, with the offset where each page starts; extraction stops
    (and the file is refused) as soon as the text passes ``max_chars`` or takes ``time_limit_s``
    (:func:`extract_pdf`): a small PDF can expand to tens of millions of characters."""
    extracted = extract_pdf(raw, max_chars, time_limit_s)
    pages = extracted.pages
    if not any(page.strip() for page in pages):
        raise SkippedFileError("PDF has no extractable text (scanned images?)")
    text, starts = joined_pages(pages)
    return LoadedDocument(
        text=text,
        title=extracted.title or path.stem,
        kind=SourceKind.PDF,
        metadata={"pages": str(len(pages))},
        page_starts=starts,
    )
