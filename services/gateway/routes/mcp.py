"""``/mcp``: Hindsight's MCP tools (``shared.mcp_tools``) over Streamable HTTP, behind the same API keys
and rate limit as ``/v1``.

Stateless, JSON responses: each request stands alone, so any gateway replica may serve it. A tool
calls this gateway's own API in-process (an ASGI transport, no socket) with the key the MCP request
brought, so what it may do, and the refusals it meets, are those of that key.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from shared.mcp_tools import ConnectGateway, hindsight_mcp

router = APIRouter(tags=["mcp"])
FORWARDED_HEADERS = ("x-api-key", "authorization")


def in_process(api: FastAPI) -> ConnectGateway:
    """An HTTP client of ``api`` itself, carrying the MCP request's key."""

    def connect(ctx: Context) -> httpx.AsyncClient:
        headers = {k: v for k, v in (ctx.headers or {}).items() if k.lower() in FORWARDED_HEADERS}
        transport = httpx.ASGITransport(app=api)
        return httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers=headers, timeout=60
        )

    return connect


def mcp_sessions(api: FastAPI) -> StreamableHTTPSessionManager:
    """The MCP server of ``api``'s tools and its stateless session manager (run in the app's lifespan).
    The gateway's own Host allow-list guards against DNS rebinding, so the SDK's is off."""
    server: MCPServer = hindsight_mcp(in_process(api))
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server.session_manager


class HandedToMCP(Response):
    """The response the MCP session manager writes itself."""

    def __init__(self, sessions: StreamableHTTPSessionManager) -> None:
        super().__init__()
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sessions.handle_request(scope, receive, send)


@router.api_route("/mcp", methods=["GET", "POST", "DELETE"], include_in_schema=False)
async def mcp_endpoint(request: Request) -> Response:
    return HandedToMCP(request.app.state.mcp_sessions)
