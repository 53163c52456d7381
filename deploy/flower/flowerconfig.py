"""Flower's configuration: the Celery dashboard never runs without basic auth, nor on the network
unless told to.

Run as ``celery -A shared.celery_app flower --conf=deploy/flower/flowerconfig.py``. The credentials
come from ``HINDSIGHT_FLOWER_BASIC_AUTH`` (``user:password``; several separated by commas); without
them, or with any user's name or password empty, Flower refuses to start rather than expose task
payloads, which carry document text. It listens on ``HINDSIGHT_FLOWER_ADDRESS``, loopback unless
set (a container sets ``0.0.0.0`` and publishes the port on the host's loopback).
"""

import os

_credentials = [c.strip() for c in os.environ.get("HINDSIGHT_FLOWER_BASIC_AUTH", "").split(",") if c.strip()]
if not _credentials:
    raise SystemExit("set HINDSIGHT_FLOWER_BASIC_AUTH=user:password: Flower does not run without basic auth")
if any(not user or not password for user, _, password in (c.partition(":") for c in _credentials)):
    raise SystemExit(
        "HINDSIGHT_FLOWER_BASIC_AUTH holds an entry without a user or a password: each must be user:password"
    )

basic_auth = _credentials
address = os.environ.get("HINDSIGHT_FLOWER_ADDRESS", "127.0.0.1")
port = int(os.environ.get("HINDSIGHT_FLOWER_PORT", "5555"))
purge_offline_workers = 60
persistent = False
