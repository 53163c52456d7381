"""Turn a file into text plus what a citation needs: title, metadata, and where each part came from."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from shared.contracts import SourceKind

SUFFIX_KINDS = {".md": SourceKind.MARKDOWN, ".markdown": SourceKind.MARKDOWN, ".txt": SourceKind.TEXT}
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n", re.DOTALL)
H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


class UnsupportedFileError(ValueError):
    """The file is not a format the indexer reads; it is reported, never guessed at."""


@dataclass
class LoadedDocument:
    text: str
    title: str
    kind: SourceKind
    metadata: dict[str, str] = field(default_factory=dict)


def kind_for(path: Path) -> SourceKind:
    kind = SUFFIX_KINDS.get(path.suffix.lower())
    if kind is None:
        raise UnsupportedFileError(f"unsupported file type {path.suffix or '(none)'}")
    return kind


def load_document(path: Path) -> LoadedDocument:
    kind = kind_for(path)
    text = path.read_bytes().decode("utf-8")
    if kind is SourceKind.MARKDOWN:
        return load_markdown(text, path)
    return LoadedDocument(text=text, title=path.stem, kind=kind)


def load_markdown(raw: str, path: Path) -> LoadedDocument:
    """Front matter becomes metadata; the body, with the front matter removed, is the text."""
    metadata: dict[str, str] = {}
    text = raw
    match = FRONT_MATTER.match(raw)
    if match:
        parsed = yaml.safe_load(match.group(1)) or {}
        if isinstance(parsed, dict):
            metadata = {str(k): str(v) for k, v in parsed.items() if v is not None}
        text = raw[match.end() :]
    heading = H1.search(text)
    title = metadata.get("title") or (heading.group(1).strip() if heading else path.stem)
    return LoadedDocument(text=text, title=title, kind=SourceKind.MARKDOWN, metadata=metadata)
