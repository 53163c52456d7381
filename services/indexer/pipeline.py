"""Index one file, and plan a scan of a folder: the logic behind ``index.document`` and ``index.scan``."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

from services.indexer.chunking import chunk_text
from services.indexer.loaders import LoadedDocument, UnsupportedFileError, kind_for, load_document
from services.indexer.manifest_diff import ScanDiff, diff_against_manifest, file_sha256
from shared.contracts import Chunk, Document, IndexFileResult, IndexFileTask, SourceKind
from shared.interfaces import Embedder, TokenSpans, VectorStore
from shared.settings import Settings

log = logging.getLogger(__name__)


class PathOutsideRootsError(ValueError):
    """A path that is not inside any configured root: refused, never read."""


def confine_to_roots(path: Path, roots: list[Path]) -> Path:
    """The resolved path if it lies inside one of ``roots`` (all of them allowed when none are set)."""
    resolved = path.resolve()
    if roots and not any(resolved.is_relative_to(root.resolve()) for root in roots):
        raise PathOutsideRootsError(f"{resolved} is outside the configured roots")
    return resolved


def candidate_files(root: Path) -> list[Path]:
    """Files under ``root`` in a supported format, skipping hidden folders such as ``.git``."""
    files = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if path.is_file():
            try:
                kind_for(path)
            except UnsupportedFileError:
                continue
            files.append(path)
    return files


def plan_scan(root: Path, store: VectorStore) -> ScanDiff:
    current = {str(path): file_sha256(path) for path in candidate_files(root)}
    return diff_against_manifest(current, store.manifest(str(root)))


def document_date(metadata: dict[str, str]) -> datetime | None:
    for key in ("updated", "created", "date"):
        value = metadata.get(key)
        if value:
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
    return None


def build_chunks(
    document: Document, loaded: LoadedDocument, token_spans: TokenSpans, settings: Settings
) -> list[Chunk]:
    spans = chunk_text(
        loaded.text,
        token_spans,
        settings.chunk_tokens,
        settings.chunk_overlap,
        markdown=loaded.kind is SourceKind.MARKDOWN,
    )
    date = document_date(loaded.metadata)
    return [
        Chunk(
            id=f"{document.id}:{ordinal}",
            document_id=document.id,
            ordinal=ordinal,
            text=loaded.text[span.start : span.end],
            heading_path=list(span.heading_path),
            char_start=span.start,
            char_end=span.end,
            title=document.title,
            source_uri=document.source_uri,
            kind=document.kind,
            space=loaded.metadata.get("space"),
            document_date=date,
        )
        for ordinal, span in enumerate(spans)
    ]


def index_file(
    task: IndexFileTask, store: VectorStore, embedder: Embedder, settings: Settings
) -> IndexFileResult:
    """Load, chunk, embed and store one file; any failure is reported for this file alone."""
    path = Path(task.path)
    try:
        loaded = load_document(path)
    except (OSError, UnicodeDecodeError, UnsupportedFileError, ValueError) as exc:
        return IndexFileResult(path=task.path, status="failed", reason=f"{type(exc).__name__}: {exc}")
    document = Document(
        id=task.document_id,
        source_uri=task.path,
        kind=loaded.kind,
        title=loaded.title,
        content_hash=task.content_hash,
        metadata=loaded.metadata,
    )
    chunks = build_chunks(document, loaded, embedder.token_spans, settings)
    vectors = embedder.embed_documents([passage_for_embedding(chunk) for chunk in chunks])
    store.replace_document(document, chunks, vectors)
    return IndexFileResult(path=task.path, status="indexed", chunks=len(chunks))


def passage_for_embedding(chunk: Chunk) -> str:
    """Title and heading path give a chunk its context, as the reader of the section sees it."""
    return "\n".join([chunk.title, *chunk.heading_path, chunk.text])
