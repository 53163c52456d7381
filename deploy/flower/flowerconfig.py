"""Flower's configuration: the Celery dashboard never runs without basic auth.

Run as ``celery -A shared.celery_app flower --conf=deploy/flower/flowerconfig.py``. The credentials
come from ``HINDSIGHT_FLOWER_BASIC_AUTH`` (``user:password``; several separated by commas); without
them Flower refuses to start rather than expose task payloads, which carry document text.
"""

import os

_credentials = [c for c in os.environ.get("HINDSIGHT_FLOWER_BASIC_AUTH", "").split(",") if ":" in c]
if not _credentials:
    raise SystemExit("set HINDSIGHT_FLOWER_BASIC_AUTH=user:password: Flower does not run without basic auth")

basic_auth = _credentials
address = os.environ.get("HINDSIGHT_FLOWER_ADDRESS", "0.0.0.0")
port = int(os.environ.get("HINDSIGHT_FLOWER_PORT", "5555"))
purge_offline_workers = 60
persistent = False
