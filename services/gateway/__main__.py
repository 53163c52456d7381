"""``python -m services.gateway``: serve the gateway on the configured address, with JSON logs.

This is the entry point that knows the real bind address, so it is where an open gateway on a
network address is refused.
"""

from __future__ import annotations

import uvicorn

from services.gateway.app import create_app
from services.gateway.auth import (
    OpenGatewayRefusedError,
    refuse_open_on_network,
    refuse_unconfined_on_network,
)
from services.gateway.http_protocol import with_head_timeout
from shared.logging import configure_logging
from shared.settings import get_settings


def main() -> None:
    settings = get_settings()
    configure_logging("gateway")
    try:
        refuse_open_on_network(settings.gateway, settings.gateway.gateway_host)
        refuse_unconfined_on_network(settings.indexing, settings.gateway.gateway_host)
    except OpenGatewayRefusedError as exc:
        raise SystemExit(str(exc)) from exc
    uvicorn.run(
        create_app(settings),
        host=settings.gateway.gateway_host,
        port=settings.gateway.gateway_port,
        log_config=None,
        access_log=False,
        http=with_head_timeout(settings.gateway.gateway_head_timeout_s),
    )


if __name__ == "__main__":
    main()
