"""Who may call ``/v1``: API keys from ``X-API-Key`` or ``Authorization: Bearer``, then a rate limit.

``authenticate`` is a router-level dependency, so every router mounted with
``api.include_router(router, dependencies=PROTECTED)`` is covered, including ones other modules add.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request, Security, status
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from services.gateway.deps import KeyFileDep, RedisDep, SettingsDep
from services.gateway.limits import enforce_rate_limit
from services.gateway.metrics import record_rejection
from shared.hosts import is_loopback
from shared.settings import GatewaySettings, IndexingSettings


class OpenGatewayRefusedError(RuntimeError):
    """An open gateway was asked for on a network address without the explicit opt-in."""


def refuse_open_on_network(settings: GatewaySettings, bind_host: str) -> None:
    """Never listen without keys on a reachable address unless told so in as many words."""
    open_remote = settings.gateway_auth == "open" and not is_loopback(bind_host)
    if open_remote and not settings.gateway_allow_open_remote:
        raise OpenGatewayRefusedError(
            f"refusing to serve without API keys on {bind_host}: anyone who can reach it could read your "
            "research. Create keys (`hindsight keys create`) and set HINDSIGHT_GATEWAY_AUTH=keys, or set "
            "HINDSIGHT_GATEWAY_ALLOW_OPEN_REMOTE=true if an open gateway on the network is really intended."
        )


def refuse_unconfined_on_network(settings: IndexingSettings, bind_host: str) -> None:
    """A gateway others can reach must confine the folders requests may name to configured roots."""
    if not settings.roots and not is_loopback(bind_host):
        raise OpenGatewayRefusedError(
            f"refusing to serve on {bind_host} without HINDSIGHT_ROOTS: index requests could name any "
            "folder this machine can read. Set HINDSIGHT_ROOTS to the folders Hindsight may index."
        )


# Declared as security schemes, so the OpenAPI schema says how to authenticate; either one will do.
API_KEY_HEADER = APIKeyHeader(name="X-API-Key", auto_error=False, description="An API key")
BEARER = HTTPBearer(auto_error=False, description="The same API key as a bearer token")
HeaderKey = Annotated[str | None, Security(API_KEY_HEADER)]
BearerKey = Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]


def presented_key(header_key: str | None, bearer: HTTPAuthorizationCredentials | None) -> str | None:
    """The key from ``X-API-Key``, else from ``Authorization: Bearer`` (never from the query string)."""
    if header_key and header_key.strip():
        return header_key.strip()
    return bearer.credentials.strip() if bearer and bearer.credentials.strip() else None


def unauthorized(request: Request, reason: str) -> HTTPException:
    record_rejection(request, "auth")
    return HTTPException(status.HTTP_401_UNAUTHORIZED, reason, headers={"WWW-Authenticate": "Bearer"})


async def authenticate(
    request: Request,
    settings: SettingsDep,
    keys: KeyFileDep,
    client: RedisDep,
    header_key: HeaderKey,
    bearer: BearerKey,
) -> str:
    """The caller's identity (a key id, or ``open:<address>``), after the per-caller rate limit."""
    if settings.gateway.gateway_auth == "open":
        caller = f"open:{request.client.host if request.client else 'unknown'}"
    else:
        key = presented_key(header_key, bearer)
        if key is None:
            raise unauthorized(request, "missing API key: send it as X-API-Key or Authorization: Bearer")
        check = keys.check(key)
        if check.record is None:
            raise unauthorized(request, check.reason)
        caller = check.record.id
    request.state.caller = caller
    await enforce_rate_limit(request, client, caller, settings.gateway, settings.tasks)
    return caller


PROTECTED = [Depends(authenticate)]
