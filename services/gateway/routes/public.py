"""``/`` with the page's ``/static`` files, ``/events/schema``, ``/healthz`` and ``/metrics``: open to
anyone who reaches the gateway; they carry no user data, and none of them costs more than a read: the
detailed health (a broadcast to the workers) is ``GET /v1/health``, behind a key."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import FileResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services.gateway.schemas import Liveness
from shared.stage_events import EventSchema, event_schema

STATIC_DIR = Path(__file__).parents[1] / "static"
router = APIRouter()
EVENT_SCHEMA = event_schema()


@router.get("/", include_in_schema=False)
async def web_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


# The page's own files and the Markdown renderer, sanitiser and PDF renderer it vendors
# (static/licenses/); any other name is 404, so nothing else under the folder is ever served.
PAGE_ASSETS = {
    "page.css": "text/css",
    "page.js": "text/javascript",
    "markdown-it.min.js": "text/javascript",
    "purify.min.js": "text/javascript",
    "pdf.min.mjs": "text/javascript",
    "pdf.worker.min.mjs": "text/javascript",
}


@router.get("/static/{name}", include_in_schema=False)
async def page_asset(name: str) -> FileResponse:
    if name not in PAGE_ASSETS:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no file {name}")
    return FileResponse(
        STATIC_DIR / name, media_type=PAGE_ASSETS[name], headers={"Cache-Control": "no-cache"}
    )


@router.get("/events/schema", response_model=EventSchema)
async def events_schema() -> EventSchema:
    """The stages events name (by their names in ``shared.stage_events.Stage``), each with the label a
    reader shows while it runs and the JSON schema of the data its events carry; the page takes its
    stage names and labels from here."""
    return EVENT_SCHEMA


@router.get("/metrics", include_in_schema=False)
async def prometheus_metrics(request: Request) -> Response:
    body = await asyncio.to_thread(generate_latest, request.app.state.metrics.registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz", response_model=Liveness)
async def healthz() -> Liveness:
    """Liveness only: the gateway answers. Redis, workers and rerankers are in ``GET /v1/health``."""
    return Liveness()
