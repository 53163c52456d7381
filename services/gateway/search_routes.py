"""``POST /v1/search``: ranked passages without synthesis, run by the retriever's ``retrieve.query``.

The gateway imports no retriever code: it sends the task by name and waits for its result, since a
search is quick enough to answer in the request (``search_timeout_s`` bounds the wait).
"""

from __future__ import annotations

import asyncio
from typing import Any

from celery.exceptions import TimeoutError as CeleryTimeoutError
from fastapi import APIRouter, HTTPException, status

from shared.celery_app import app as celery_app
from shared.contracts import SearchRequest, SearchResponse
from shared.settings import get_settings
from shared.topology import RETRIEVE_QUERY

router = APIRouter(tags=["search"])


def run_query(request: SearchRequest, timeout_s: float) -> dict[str, Any]:
    result = celery_app.signature(RETRIEVE_QUERY, args=[request.to_payload()]).apply_async()
    try:
        return result.get(timeout=timeout_s)
    finally:
        result.forget()


@router.post("/v1/search", response_model=SearchResponse)
async def search(body: SearchRequest) -> SearchResponse:
    """Search in ``semantic``, ``exact``, ``hybrid`` or ``auto`` mode and return the ranked passages."""
    timeout_s = get_settings().search_timeout_s
    try:
        payload = await asyncio.to_thread(run_query, body, timeout_s)
    except CeleryTimeoutError as exc:
        raise HTTPException(status.HTTP_504_GATEWAY_TIMEOUT, f"search took over {timeout_s:g} s") from exc
    except Exception as exc:  # the task's own error, re-raised by Celery: report it, keep serving
        raise HTTPException(
            status.HTTP_502_BAD_GATEWAY, f"search failed: {type(exc).__name__}: {exc}"
        ) from exc
    return SearchResponse.model_validate(payload)
