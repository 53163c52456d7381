"""The scraper's own nouns: a listed thread, and a thread normalised for rendering.

Scraped threads and imported files both become a :class:`Thread`, so one renderer, one hash and
one checkpoint serve every way in.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class ThreadSummary(BaseModel):
    """One item of ``list_ask_threads`` / ``list_pinned_ask_threads`` (only the keys we use).

    Real items carry no ``is_pinned`` (only the pinned listing implies it) and a ``total_threads``
    that is capped or inflated, so it is kept for the log only; any key may be ``null``.
    """

    model_config = ConfigDict(extra="ignore")

    uuid: str
    slug: str | None = None
    title: str | None = None
    last_query_datetime: str | None = None
    mode: str | None = None
    display_model: str | None = None
    query_count: int | None = None
    total_threads: int | None = None
    space: str | None = None
    space_uuid: str | None = None
    is_pinned: bool = False

    @property
    def listing_fingerprint(self) -> str:
        """What changes in the listing when the thread changes (a follow-up, a rename, a move)."""
        return "|".join(
            str(part) for part in (self.last_query_datetime, self.title, self.space, self.query_count)
        )


class Source(BaseModel):
    """A web result an answer cites as ``[n]`` (1-based within its turn)."""

    name: str
    url: str
    snippet: str = ""


class Attachment(BaseModel):
    """An image, media item or attached file of a turn: kept as a link with its caption."""

    kind: str = Field(description="image, video, file, ...")
    caption: str
    url: str = ""


class Turn(BaseModel):
    question: str
    answer: str
    sources: list[Source] = Field(default_factory=list)
    attachments: list[Attachment] = Field(default_factory=list)


class Thread(BaseModel):
    uuid: str
    title: str
    space: str = "General"
    space_uuid: str | None = None
    slug: str | None = None
    url: str | None = None
    created: datetime | None = None
    updated: datetime | None = None
    model: str | None = None
    mode: str | None = None
    turns: list[Turn] = Field(default_factory=list)
