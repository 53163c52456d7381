"""What the gateway tells browsers, and which Host names it answers to.

- ``TrustedHostMiddleware`` with :func:`allowed_hosts`: a request naming any other host (a DNS
  rebinding page, for one) gets 400 before it reaches a route;
- :class:`SecurityHeaders` on every response: ``nosniff``, no framing (``frame-ancestors 'none'``
  and ``X-Frame-Options``), no referrer, and a Content-Security-Policy that runs only the web page's
  own script and style (its files from this origin, inline blocks by their SHA-256) and lets it
  connect to this origin alone.
"""

from __future__ import annotations

import base64
import hashlib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.settings import GatewaySettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("0.0.0.0", "::", "")


def allowed_hosts(settings: GatewaySettings) -> list[str]:
    """Loopback names, the bind address (unless it is a wildcard), the host of
    ``HINDSIGHT_GATEWAY_URL``, and the names ``HINDSIGHT_ALLOWED_HOSTS`` adds (``*``: every name).
    Loopback names stay: no page elsewhere can send them, and the CLI and healthchecks use them."""
    hosts = [*LOOPBACK_HOSTS, urlparse(settings.gateway_url).hostname or "", *settings.allowed_hosts]
    if settings.gateway_host not in WILDCARD_BINDS:
        hosts.append(settings.gateway_host)
    return [host for host in dict.fromkeys(hosts) if host]


class InlineBlocks(HTMLParser):
    """The text of each inline ``<script>`` and ``<style>`` element of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.blocks: dict[str, list[str]] = {"script": [], "style": []}
        self.current: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.blocks and not dict(attrs).get("src"):
            self.current = tag
            self.blocks[tag].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == self.current:
            self.current = None

    def handle_data(self, data: str) -> None:
        if self.current:
            self.blocks[self.current][-1] += data


def source_hashes(blocks: list[str]) -> str:
    return " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(block.encode()).digest()).decode()}'" for block in blocks
    )


def content_security_policy(page: Path) -> str:
    """A policy that admits the page's own script and style files (``'self'``: the gateway serves only
    the page's two files as such, and every other response is JSON under ``nosniff``), its inline
    script and style by hash, and nothing else."""
    parser = InlineBlocks()
    parser.feed(page.read_text(encoding="utf-8"))
    scripts = " ".join(["'self'", source_hashes(parser.blocks["script"])]).strip()
    styles = " ".join(["'self'", source_hashes(parser.blocks["style"])]).strip()
    return (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; "
        "img-src 'self' data:; worker-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP response."""

    def __init__(self, app: ASGIApp, csp: str) -> None:
        self.app = app
        self.headers = {
            "Content-Security-Policy": csp,
            "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer",
            "Cross-Origin-Opener-Policy": "same-origin",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)
