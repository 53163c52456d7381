"""Search filters checked on a chunk, for legs that find chunks outside the store's own query."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.contracts import Chunk, SearchFilters


def aware(moment: datetime) -> datetime:
    """Naive datetimes are taken as UTC, as the store takes them."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def chunk_passes(chunk: Chunk, filters: SearchFilters) -> bool:
    """The same restrictions the store applies in its SQL predicate (see ``filter_clause``)."""
    if filters.kinds and chunk.kind not in filters.kinds:
        return False
    if filters.spaces and chunk.space not in filters.spaces:
        return False
    if filters.path_prefix and not chunk.source_uri.startswith(filters.path_prefix):
        return False
    if filters.date_from or filters.date_to:
        if chunk.document_date is None:
            return False
        date = aware(chunk.document_date)
        if filters.date_from and date < aware(filters.date_from):
            return False
        if filters.date_to and date > aware(filters.date_to):
            return False
    return True
