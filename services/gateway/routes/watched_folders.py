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
from services.gateway.paths import confined_path
from services.gateway.schemas import FolderPath, WatchStart
from shared.contracts import WatchedRoot
from shared.events import redis_client
from shared.index_jobs import WatchRegistry, allowed_roots
from shared.settings import Settings

router = APIRouter(prefix="/v1", tags=["indexing"])


def watch_registry(settings: SettingsDep) -> WatchRegistry:
    return WatchRegistry(redis_client(settings.redis_url))


RegistryDep = Annotated[WatchRegistry, Depends(watch_registry)]


def confined_folder(raw: str, settings: Settings) -> Path:
    """The resolved folder, or a 422 that says why it is refused."""
    folder = confined_path(raw, allowed_roots(settings))
    if not folder.is_dir():
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{folder} is not a folder")
    return folder


@router.post("/watch", status_code=status.HTTP_201_CREATED, response_model=WatchedRoot)
async def watch_root(body: WatchStart, registry: RegistryDep, settings: SettingsDep) -> WatchedRoot:
    folder = confined_folder(body.root, settings)
    return await asyncio.to_thread(registry.add, folder)


@router.get("/watch", response_model=list[WatchedRoot])
async def watched_roots(registry: RegistryDep) -> list[WatchedRoot]:
    return await asyncio.to_thread(registry.list)


@router.delete("/watch", status_code=status.HTTP_204_NO_CONTENT)
async def unwatch_root(root: Annotated[FolderPath, Query()], registry: RegistryDep) -> None:
    removed = await asyncio.to_thread(registry.remove, Path(root).expanduser().resolve())
    if not removed:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"{root} is not watched")
