"""What route handlers take from the application: its settings, its Redis client, its key file."""

from __future__ import annotations

from typing import Annotated

import redis.asyncio as aioredis
from fastapi import Depends, Request

from shared.api_keys import KeyFile
from shared.settings import Settings


def request_redis(request: Request) -> aioredis.Redis:
    return request.app.state.redis


def request_settings(request: Request) -> Settings:
    return request.app.state.settings


def request_key_file(request: Request) -> KeyFile:
    return request.app.state.key_file


RedisDep = Annotated[aioredis.Redis, Depends(request_redis)]
SettingsDep = Annotated[Settings, Depends(request_settings)]
KeyFileDep = Annotated[KeyFile, Depends(request_key_file)]
