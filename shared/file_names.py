"""File names that are safe on Linux, macOS and Windows: no separators or control characters, no
reserved names, cut to a byte length (exported threads, saved notes)."""

from __future__ import annotations

import re
import unicodedata

_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f-\x9f]')
_WINDOWS_RESERVED = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$", re.IGNORECASE)
MAX_TITLE_BYTES = 80


def _truncate_utf8(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")[:limit]
    return encoded.decode("utf-8", errors="ignore")


def safe_component(text: str, limit: int = MAX_TITLE_BYTES, fallback: str = "Untitled") -> str:
    """One path component: no separators or control characters, no trailing dots or spaces."""
    cleaned = unicodedata.normalize("NFC", text)
    cleaned = _FORBIDDEN.sub("_", cleaned)
    cleaned = " ".join(cleaned.split())
    cleaned = _truncate_utf8(cleaned, limit).strip(" .")
    if not cleaned or set(cleaned) <= {"_"}:
        cleaned = fallback
    if _WINDOWS_RESERVED.match(cleaned):
        cleaned = f"_{cleaned}"
    return cleaned
