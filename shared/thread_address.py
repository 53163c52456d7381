"""The perplexity.ai address of an exported thread, the only kind of web address a citation carries.

A file's front matter is data the user (or anyone who wrote the file) controls: its ``url`` must not
make the page or the CLI link the user to another site under a thread's name. The indexer keeps a
chunk's ``source_url`` only when this module accepts it, and the contracts refuse any other.
"""

from __future__ import annotations

import httpx

PERPLEXITY_HOST = "perplexity.ai"
# The mark the exporter writes in an exported thread's front matter (``source: perplexity``): the
# indexer reads a file so marked as a thread (title, then one ``##`` question a turn).
EXPORTED_THREAD_SOURCE = "perplexity"


def perplexity_address(url: object) -> str | None:
    """``url`` if it is a perplexity.ai page (https, the host perplexity.ai or one of its subdomains,
    no credentials, no other port), else ``None``."""
    if not isinstance(url, str):
        return None
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return None
    host = parsed.host
    trusted = host == PERPLEXITY_HOST or host.endswith("." + PERPLEXITY_HOST)
    if parsed.scheme != "https" or not trusted or parsed.userinfo or parsed.port not in (None, 443):
        return None
    return str(parsed)


def checked_perplexity_address(url: str | None) -> str | None:
    """``url`` unchanged when it is ``None`` or a perplexity.ai address; ``ValueError`` for any other
    (a pydantic validator: a contract never holds another site's address)."""
    if url is not None and perplexity_address(url) != url:
        raise ValueError("source_url must be an https perplexity.ai address")
    return url
