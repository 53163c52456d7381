"""An entry's images, media items and attached files, kept as links with their captions.

Entries carry ``media_items[]`` (``medium``, ``image``, ``url``, ``name``; Yiksing/pplx-tools
``raw_entries.json``), ``attachments[]`` (URLs of uploaded files) and image blocks (``media_items``,
``ask_text_<N>_images`` with ``inline_entity_block.media_block``).
"""

from __future__ import annotations

from typing import Any

from services.scraper.models import Attachment

JsonObject = dict[str, Any]


def first_str(*values: Any) -> str | None:
    """The first non-blank string of ``values``, stripped."""
    return next((v.strip() for v in values if isinstance(v, str) and v.strip()), None)


def _media_blocks(blocks: list[JsonObject]) -> list[Any]:
    """The ``media_items`` of ``media_items`` and ``ask_text_N_images`` blocks."""
    items: list[Any] = []
    for block in blocks:
        media = block.get("media_block") or (block.get("inline_entity_block") or {}).get("media_block")
        if isinstance(media, dict):
            items += [*(media.get("media_items") or []), *(media.get("generated_media_items") or [])]
    return items


def _attachment(item: Any, kind: str) -> Attachment | None:
    """A media item (``medium``, ``image``/``url``, ``name``) or an attachment (a URL or file name)."""
    if isinstance(item, str) and item.strip():
        return Attachment(kind=kind, caption=item.strip().rsplit("/", 1)[-1], url=item.strip())
    if not isinstance(item, dict):
        return None
    url = first_str(item.get("image"), item.get("url"), item.get("file_url"), item.get("link")) or ""
    caption = first_str(item.get("name"), item.get("title"), item.get("file_name"), item.get("filename"))
    if not url and not caption:
        return None
    return Attachment(kind=str(item.get("medium") or kind), caption=caption or url, url=url)


def entry_attachments(entry: JsonObject, blocks: list[JsonObject]) -> list[Attachment]:
    """Images, media items and attached files of an entry, each URL once, in order."""
    found = [
        *(_attachment(i, "file") for i in entry.get("attachments") or []),
        *(_attachment(i, "image") for i in [*(entry.get("media_items") or []), *_media_blocks(blocks)]),
    ]
    unique: dict[str, Attachment] = {}
    for item in found:
        if item is not None:
            unique.setdefault(item.url or item.caption, item)
    return list(unique.values())
