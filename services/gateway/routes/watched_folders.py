"""``/v1/watch``: the folders the indexer's watcher process keeps in sync.

``POST /v1/watch`` registers a folder, ``GET /v1/watch`` lists them and ``DELETE /v1/watch`` stops
watching one. Folders from requests are confined to the configured roots, like every path the API
accepts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, status

from services.gateway.deps import SettingsDep
from services.gateway.paths import confined_folder
from services.gateway.schemas import FolderPath, WatchStart, error_responses
from shared.contracts import WatchedRoot
from shared.events import redis_client
from shared.index_jobs import WatchRegistry

router = APIRouter(prefix="/v1", tags=["indexing"])


def watch_registry(settings: SettingsDep) -> WatchRegistry:
    return WatchRegistry(redis_client(settings.redis_url))


RegistryDep = Annotated[WatchRegistry, Depends(watch_registry)]


@router.post(
    "/watch", status_code=status.HTTP_201_CREATED, response_model=WatchedRoot, responses=error_responses(403)
)
async def watch_root(body: WatchStart, registry: RegistryDep, settings: SettingsDep) -> WatchedRoot:
    folder = confined_folder(body.root, settings.indexing, settings.roots_file)
    return await asyncio.to_thread(registry.add, folder)


@router.get("/watch", response_model=list[WatchedRoot])
async def watched_roots(registry: RegistryDep) -> list[WatchedRoot]:
    return await asyncio.to_thread(registry.list)


@router.delete("/watch", status_code=status.HTTP_204_NO_CONTENT)
async def unwatch_root(root: Annotated[FolderPath, Query()], registry: RegistryDep) -> None:
    try:
        folder = Path(root).expanduser().resolve()
    except RuntimeError:  # "~user" of an unknown user: nothing of theirs is watched
        folder = None
    removed = folder is not None and await asyncio.to_thread(registry.remove, folder)
    if not removed:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{root} is not watched")
