"""Files the indexer refused for what they hold, remembered until they change.

A PDF that takes too long to extract or expands past the text limit, a corrupt or binary file: the
refusal depends on the bytes alone, so reading the same bytes again on every scan (the watcher scans
after each burst of changes) would only spend the indexer's time again. Each refusal is kept with the
file's SHA-256 in the data folder (one small private file per path); a scan passes over a file whose
content still has that hash, reporting it as it was (skipped or failed, with the reason), and reads it
again once it changed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from shared.contracts import IndexFileResult
from shared.safe_files import write_private

AGAIN = "; not read again until the file changes"


class Refusal(BaseModel):
    path: str
    sha256: str
    status: Literal["skipped", "failed"] = "skipped"
    reason: str


class Refusals:
    """The remembered refusals, one JSON file per refused path under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, data_dir: Path) -> Refusals:
        """The refusals kept in the data folder ``data_dir``."""
        return cls(data_dir.resolve() / "refused")

    def entry(self, path: str) -> Path:
        return self.folder / f"{hashlib.sha256(path.encode()).hexdigest()}.json"

    def remember(self, result: IndexFileResult, sha256: str) -> None:
        """Keep ``result`` (a skipped or failed file) for the content that has ``sha256``."""
        status = "failed" if result.status == "failed" else "skipped"
        refusal = Refusal(path=result.path, sha256=sha256, status=status, reason=result.reason or "")
        write_private(self.entry(result.path), refusal.model_dump_json())

    def recall(self, path: str, sha256: str) -> IndexFileResult | None:
        """How ``path`` was refused (skipped or failed, and why) when its content had ``sha256``;
        ``None`` when it was not, or had other content then."""
        try:
            refusal = Refusal.model_validate_json(self.entry(path).read_bytes())
        except (OSError, ValidationError):
            return None
        if refusal.path != path or refusal.sha256 != sha256:
            return None
        reason = refusal.reason if refusal.reason.endswith(AGAIN) else refusal.reason + AGAIN
        return IndexFileResult(path=path, status=refusal.status, reason=reason)
