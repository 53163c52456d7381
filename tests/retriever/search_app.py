"""The gateway with the search router mounted, as the lead mounts it, for the end-to-end test."""

from __future__ import annotations

from fastapi import FastAPI

from services.gateway.app import create_app
from services.gateway.search_routes import router


def create() -> FastAPI:
    api = create_app()
    api.include_router(router)
    return api
