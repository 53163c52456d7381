"""``HINDSIGHT_ALLOWED_HOSTS`` does what docs/security.md and docs/docker.md say (the smaller finding:
it was undocumented): the names it lists are answered besides the loopback ones, which the CLI and the
compose healthcheck use; any other ``Host`` (a DNS-rebinding page) gets 400; ``*`` answers every name.

The gateway is the real application in this process (its Host check runs before any route, so the
page at ``/``, which needs neither a key nor Redis, shows what a browser would get)."""

from __future__ import annotations

from pathlib import Path

import yaml
from fastapi.testclient import TestClient

from services.gateway.app import create_app
from shared.settings import Settings
from tests.conftest import REPO


def page_status(allowed: str, host: str, tmp_path: Path) -> int:
    """What ``GET /`` with ``Host: host`` gets from a gateway with ``HINDSIGHT_ALLOWED_HOSTS=allowed``."""
    settings = Settings.model_validate({"data_dir": tmp_path / "data", "allowed_hosts": allowed})
    client = TestClient(create_app(settings), base_url="http://127.0.0.1:8000")
    return client.get("/", headers={"Host": host}).status_code


def test_listed_names_are_answered_besides_loopback_ones_and_others_are_refused(tmp_path: Path) -> None:
    allowed = "host.docker.internal, hindsight.lan"
    for host in ("host.docker.internal:8000", "hindsight.lan", "127.0.0.1:8000", "localhost"):
        assert page_status(allowed, host, tmp_path) == 200, host
    for host in ("attacker.example", "hindsight.lan.attacker.example", "evil-hindsight.lan"):
        assert page_status(allowed, host, tmp_path) == 400, host


def test_a_star_answers_every_host_name(tmp_path: Path) -> None:
    assert page_status("", "attacker.example", tmp_path) == 400
    assert page_status("*", "attacker.example", tmp_path) == 200


def test_compose_hands_the_setting_to_the_gateway() -> None:
    """docs/docker.md says to set it in ``.env``: the gateway's container must receive it."""
    gateway = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["gateway"]
    assert gateway["environment"]["HINDSIGHT_ALLOWED_HOSTS"] == "${HINDSIGHT_ALLOWED_HOSTS:-}"
    assert "HINDSIGHT_ALLOWED_HOSTS=" in (REPO / ".env.example").read_text()
