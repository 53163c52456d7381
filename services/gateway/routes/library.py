"""``/v1/library``: the folders Hindsight knows, for the page's library panel and ``hindsight status``;
``/v1/library/perplexity``: the Perplexity export folder read back by the scrape worker (threads by
origin, turns against what the site reported, files that do not read as a thread), the panel's
side of ``hindsight library check``.

A folder is known once it was indexed through ``POST /v1/index`` (which records the job) or is
watched. Each entry has its last job's report: how many documents the folder holds, what changed,
which files failed and why, and when; a report is copied out of its job's expiring key the first
time it is read, so the last sync stays known after the job's events expire.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, cast

from celery.exceptions import TimeoutError as CeleryTimeoutError
from fastapi import APIRouter, HTTPException, Query, status

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.schemas import IndexJobStarted, LibraryFolder, error_responses
from services.gateway.worker_census import census
from services.gateway.workflow import run_library_check
from shared.contracts import LibraryCheck, ScanReport
from shared.redis_keys import LIBRARY_JOBS_KEY, LIBRARY_REPORTS_KEY, WATCHED_ROOTS_KEY, index_report_key
from shared.topology import Queue

router = APIRouter(prefix="/v1", tags=["indexing"])
LIBRARY_CHECK_TIMEOUT_S = 20.0


async def record_index_job(client: RedisDep, root: str, job_id: str) -> None:
    """Remember ``job_id`` as the latest index job of the folder ``root``, started now."""
    await client.hset(
        LIBRARY_JOBS_KEY, root, IndexJobStarted(job_id=job_id, started_at=time.time()).model_dump_json()
    )


async def folder_entry(client: RedisDep, root: str, watched: bool) -> LibraryFolder:
    raw_job = cast(str | None, await client.hget(LIBRARY_JOBS_KEY, root))
    job = IndexJobStarted.model_validate_json(raw_job) if raw_job else None
    job_id = job.job_id if job else None
    raw = await client.get(index_report_key(job_id)) if job_id else None
    if raw:
        await client.hset(LIBRARY_REPORTS_KEY, root, raw)
    else:
        raw = await client.hget(LIBRARY_REPORTS_KEY, root)
    report = ScanReport.model_validate_json(raw) if raw else None
    running = job_id is not None and (report is None or report.job_id != job_id)
    synced_at = job.started_at if job else None
    return LibraryFolder(root=root, watched=watched, last_report=report, running=running, synced_at=synced_at)


def export_spaces(root: str, export_root: Path) -> dict[str, int]:
    """Threads per Perplexity space (a folder of Markdown files each) when ``root`` is the export
    folder; links are not followed."""
    if Path(root) != export_root or not export_root.is_dir():
        return {}
    return {
        space.name: sum(
            1 for f in space.iterdir() if f.suffix == ".md" and f.is_file() and not f.is_symlink()
        )
        for space in sorted(export_root.iterdir())
        if space.is_dir() and not space.is_symlink()
    }


@router.get("/library", response_model=list[LibraryFolder])
async def library(client: RedisDep, settings: SettingsDep) -> list[LibraryFolder]:
    """Every known folder, by path: watched or not, its last sync's report, whether a sync runs; the
    Perplexity export folder with its threads per space."""
    watched = set(cast(list[str], await client.hkeys(WATCHED_ROOTS_KEY)))
    indexed = set(cast(list[str], await client.hkeys(LIBRARY_JOBS_KEY)))
    folders = [await folder_entry(client, root, root in watched) for root in sorted(watched | indexed)]
    for folder in folders:
        folder.spaces = await asyncio.to_thread(export_spaces, folder.root, settings.export_root)
    return folders


@router.delete("/library", status_code=status.HTTP_204_NO_CONTENT)
async def forget_folder(root: Annotated[str, Query(min_length=1)], client: RedisDep) -> None:
    """Forget a folder: it leaves the list and is no longer watched (its indexed documents stay)."""
    pipe = client.pipeline()
    for key in (LIBRARY_JOBS_KEY, LIBRARY_REPORTS_KEY, WATCHED_ROOTS_KEY):
        pipe.hdel(key, root)
    await pipe.execute()


@router.get("/library/perplexity", response_model=LibraryCheck, responses=error_responses(503, 504))
async def perplexity_library() -> LibraryCheck:
    """Every file of the Perplexity export folder read back: origin, turns against the site's
    count, or why it does not read as a thread. The known-item search is ``hindsight library check``."""
    if await census.without_worker((Queue.SCRAPE,)):  # a read: never queued for a worker to come
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no scrape worker is running to read the export folder: `hindsight up` starts one "
            "(in Docker, the `scraper` service)",
        )
    try:
        return await asyncio.to_thread(run_library_check, LIBRARY_CHECK_TIMEOUT_S)
    except CeleryTimeoutError as exc:
        raise HTTPException(
            status.HTTP_504_GATEWAY_TIMEOUT,
            f"the scrape worker did not answer in {LIBRARY_CHECK_TIMEOUT_S:g} s (a scrape may be running)",
        ) from exc
