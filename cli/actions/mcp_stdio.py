"""``hindsight mcp``: the MCP tools over stdio, for desktop assistants that start their servers as
processes; each tool call goes to the configured gateway with this machine's key."""

from __future__ import annotations

import logging

import httpx
from mcp.server.mcpserver import Context

from cli.local_key import client_key
from shared.mcp_tools import hindsight_mcp
from shared.settings import get_settings


def serve_stdio() -> None:
    """Serve until the assistant closes stdin. Nothing but MCP messages is written to stdout."""
    settings = get_settings()
    key = client_key(settings)
    headers = {"X-API-Key": key} if key else {}

    def connect(_: Context) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=settings.gateway.gateway_url, headers=headers, timeout=60)

    server = hindsight_mcp(connect)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per tool call on stderr
    server.run("stdio")
