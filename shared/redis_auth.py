"""Who may talk to Redis: a generated password for the application's own Redis user.

Redis holds every queued task, stored answer and event stream, so a Redis anyone on the machine
can reach is a way around the gateway's API keys. The local stack's Redis runs with an ACL file
(mode 0600) in which the ``default`` user is off and the application's user needs a password that
``hindsight up`` generates and keeps in the data folder (mode 0600, beside the CLI's key). That user
may not run Redis's ``@dangerous`` commands (``FLUSHALL``, ``SHUTDOWN``, ``CONFIG``, ``DEBUG``,
``KEYS``, ``MONITOR``, ``ACL``...): a leaked password can read and queue work, not wipe or
reconfigure the server. The ACL file stores only the password's SHA-256.
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse, urlunparse

from shared.safe_files import write_private

APP_USER = "hindsight"
# Every key and pub/sub channel; every command but the ``@dangerous`` category.
APP_USER_RULES = "~* &* +@all -@dangerous"


def acl_rules(user: str, password: str, rules: str = APP_USER_RULES) -> str:
    """An ACL file: ``user`` on with ``password`` (stored hashed) and ``rules``; every other user,
    ``default`` included, off.

    No client can log in as the ``default`` user (it is off and has no password), but it keeps every
    permission: Redis replays its own append-only file as that user and checks the commands inside each
    MULTI against its rules, so a ``default`` without them would drop every transaction (Celery's chord
    counters, kombu's requeues) when Redis restarts."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    default_off = "" if user == "default" else "user default off ~* &* +@all\n"
    return f"{default_off}user {user} on #{digest} {rules}\n"


def ensure_password(path: Path) -> str:
    """The password kept in ``path``; a new random one (written 0600) when there is none yet."""
    try:
        current = path.read_text().strip()
    except FileNotFoundError:
        current = ""
    if current:
        return current
    password = secrets.token_hex(32)
    write_private(path, password + "\n")
    return password


def has_credentials(url: str) -> bool:
    return bool(urlparse(url).password)


def with_credentials(url: str, user: str, password: str) -> str:
    """``url`` with ``user:password@`` before its host (replacing any credentials it had)."""
    parsed = urlparse(url)
    host = parsed.hostname or "127.0.0.1"
    port = f":{parsed.port}" if parsed.port else ""
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{host}{port}"
    return urlunparse(parsed._replace(netloc=netloc))


def unix_socket_url(socket: Path, user: str, password: str, database: int = 0) -> str:
    """redis-py's URL of a Redis on the unix ``socket`` as ``user`` with ``password``
    (``unix://user:password@/path?db=N``); :func:`celery_url` turns it into Celery's form."""
    credentials = f"{quote(user, safe='')}:{quote(password, safe='')}"
    return f"unix://{credentials}@{quote(str(socket))}?db={database}"


def celery_url(url: str) -> str:
    """``url`` as Celery's broker and result backend take it: a ``unix://`` URL becomes
    ``redis+socket://`` (the database travels as kombu's ``virtual_host``); any other is unchanged."""
    parsed = urlparse(url)
    if parsed.scheme != "unix":
        return url
    database = parse_qs(parsed.query).get("db", ["0"])[0]
    return urlunparse(parsed._replace(scheme="redis+socket", query=f"virtual_host={database}"))
