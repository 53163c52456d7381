"""``/v1/scrape``: export the Perplexity library through the scrape worker, then index what changed.

``POST /v1/scrape`` sends ``scrape.run`` and answers 202 with the job's URLs; one run at a time (a
second POST while one runs gets 409 with the running job's id), and 503 when no scrape worker is
up to take it. ``GET /v1/scrape/{job_id}/events`` streams the job's events like an index job's: the
``scrape`` stage (threads found, files written), then, when a file changed, the ``index`` stages of
the index job it queued under the same id. The stream ends when the index job ends, or when the
scrape fails or changed nothing.
"""

from __future__ import annotations

import asyncio
import uuid

from fastapi import APIRouter, HTTPException, Request, status
from pydantic import BaseModel, StrictBool
from sse_starlette.sse import EventSourceResponse

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.schemas import EVENT_STREAM_RESPONSES, error_responses
from services.gateway.streaming import STREAM_START, LastEventId, SentEvents, event_stream
from services.gateway.worker_census import census
from shared.contracts import Event, ScrapeRequest
from shared.events import redis_client
from shared.redis_keys import SCRAPE_LOCK_KEY, SCRAPE_LOCK_LIFETIME, scrape_job_key
from shared.scrape_runs import enqueue_scrape, release_lock
from shared.stage_events import Stage
from shared.topology import Queue

router = APIRouter(prefix="/v1/scrape", tags=["scrape"])


class ScrapeStart(BaseModel):
    # Strict: ``0``, ``"yes"`` or ``"false"`` are not booleans (a lax bool took ``0`` for ``false``).
    refetch_all: StrictBool = False


class ScrapeAccepted(BaseModel):
    job_id: str
    events_url: str


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=ScrapeAccepted,
    responses=error_responses(409, 503),
)
async def scrape(client: RedisDep, settings: SettingsDep, body: ScrapeStart | None = None) -> ScrapeAccepted:
    job_id = uuid.uuid4().hex
    if not await client.set(SCRAPE_LOCK_KEY, job_id, nx=True, ex=SCRAPE_LOCK_LIFETIME.ttl_s(settings.tasks)):
        running = str(await client.get(SCRAPE_LOCK_KEY))
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"a scrape is already running (job {running}); follow /v1/scrape/{running}/events",
        )
    if settings.gateway.refuse_without_workers and await census.without_worker((Queue.SCRAPE,)):
        await asyncio.to_thread(release_lock, job_id, redis_client(settings.redis_url))
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no scrape worker is running: `hindsight up` starts one (in Docker, the `scraper` service)",
        )
    await client.set(scrape_job_key(job_id), "1", ex=scrape_job_key.lifetime.ttl_s(settings.tasks))
    request = ScrapeRequest(job_id=job_id, refetch_all=body.refetch_all if body else False)
    await asyncio.to_thread(enqueue_scrape, request)
    return ScrapeAccepted(job_id=job_id, events_url=f"/v1/scrape/{job_id}/events")


def ends_scrape_job(event: Event) -> bool:
    """The last event of a scrape job's stream (an index job it queued ends with its own)."""
    if event.stage == Stage.INDEX:
        return event.status in ("done", "failed")
    return event.stage == Stage.SCRAPE and (
        event.status == "failed" or (event.status == "done" and not event.data.get("index_queued"))
    )


async def until_scrape_job_ends(events: SentEvents) -> SentEvents:
    """The job's events, ending with the scrape's failure, or its success when it queued no index
    job, or else the index job's report."""
    async for message in events:
        yield message
        if "data" in message and ends_scrape_job(Event.model_validate_json(message["data"])):
            return


@router.get("/{job_id}/events", response_class=EventSourceResponse, responses=EVENT_STREAM_RESPONSES)
async def scrape_events(
    job_id: str, request: Request, client: RedisDep, settings: SettingsDep, after: LastEventId = STREAM_START
) -> EventSourceResponse:
    if not await client.exists(scrape_job_key(job_id)):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no scrape job {job_id}")
    idle_limit_s = settings.gateway.stream_idle_s or SCRAPE_LOCK_LIFETIME.ttl_s(settings.tasks)
    return event_stream(
        request, client, job_id, Stage.INDEX, after, idle_limit_s, annotate=until_scrape_job_ends
    )
