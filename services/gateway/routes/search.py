"""``POST /v1/search``: ranked passages without synthesis, run by the retriever's query task.

A search is quick enough to answer in the request: the route waits for the task's result, at most
``search_timeout_s``.
"""

from __future__ import annotations

import asyncio
import logging

from celery.exceptions import TimeoutError as CeleryTimeoutError
from fastapi import APIRouter, HTTPException, status

from services.gateway.deps import SettingsDep
from services.gateway.evidence import with_lines
from services.gateway.schemas import error_responses
from services.gateway.workflow import run_search
from shared.contracts import SearchRequest, SearchResponse
from shared.index_jobs import allowed_roots

log = logging.getLogger(__name__)
router = APIRouter(tags=["search"])


@router.post("/v1/search", response_model=SearchResponse, responses=error_responses(502, 504))
async def search(body: SearchRequest, settings: SettingsDep) -> SearchResponse:
    """Search in ``semantic``, ``exact``, ``hybrid`` or ``auto`` mode and return the ranked passages,
    each Markdown or text passage with the line of its file it starts on."""
    timeout_s = settings.retrieval.search_timeout_s
    try:
        found = await asyncio.to_thread(run_search, body, timeout_s)
    except CeleryTimeoutError as exc:
        raise HTTPException(status.HTTP_504_GATEWAY_TIMEOUT, f"search took over {timeout_s:g} s") from exc
    except Exception as exc:  # the task's own error, re-raised by Celery: log it, keep serving
        log.exception("search failed")
        raise HTTPException(
            status.HTTP_502_BAD_GATEWAY, "search failed in the retriever; its log and the gateway's say why"
        ) from exc
    return await asyncio.to_thread(with_lines, found, allowed_roots(settings.indexing, settings.roots_file))
