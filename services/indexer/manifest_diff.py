"""Which files under a root are new, changed, unchanged or gone, by the digest of their content: the
SHA-256 of their bytes, and for a PDF or HTML file the version of the rules its text is extracted by
(``shared.extracted_text.EXTRACTION_VERSION``), so new rules re-extract those files."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from shared.contracts import SourceKind
from shared.extracted_text import EXTRACTION_VERSION
from shared.interfaces import ManifestEntry
from shared.safe_files import FileTooLargeError, open_regular_file
from shared.source_text import kind_of

HASH_BLOCK = 1 << 20


def content_digest(sha256: str, kind: SourceKind | None) -> str:
    """What a file's manifest entry records of its content: the SHA-256 of its bytes, and for an
    extracted kind (PDF, HTML) ``+x`` and the extraction rules' version."""
    extracted = kind in (SourceKind.PDF, SourceKind.HTML)
    return f"{sha256}+x{EXTRACTION_VERSION}" if extracted else sha256


def file_digest(path: Path, max_bytes: int, roots: Sequence[Path] = ()) -> tuple[str, int]:
    """The file's :func:`content_digest` and size, its bytes read through the safe open
    (``shared.safe_files``)."""
    digest, size = hashlib.sha256(), 0
    with open_regular_file(path, max_bytes, roots) as handle:
        while block := handle.read(HASH_BLOCK):
            size += len(block)
            if size > max_bytes:
                raise FileTooLargeError(size, max_bytes)
            digest.update(block)
    return content_digest(digest.hexdigest(), kind_of(path)), size


def document_id_for(source_uri: str) -> str:
    """A stable id per path, so a changed file replaces its own chunks."""
    return "doc_" + hashlib.sha256(source_uri.encode()).hexdigest()[:24]


@dataclass
class ScanDiff:
    new: dict[str, str] = field(default_factory=dict)
    changed: dict[str, str] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[ManifestEntry] = field(default_factory=list)


def diff_against_manifest(current: dict[str, str], manifest: dict[str, ManifestEntry]) -> ScanDiff:
    """Compare ``{source_uri: sha256}`` on disk with the store's manifest."""
    diff = ScanDiff()
    for uri, digest in sorted(current.items()):
        entry = manifest.get(uri)
        if entry is None:
            diff.new[uri] = digest
        elif entry.content_hash != digest:
            diff.changed[uri] = digest
        else:
            diff.unchanged.append(uri)
    diff.deleted = [entry for uri, entry in sorted(manifest.items()) if uri not in current]
    return diff
