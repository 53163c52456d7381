"""The compose file: the services the architecture names, healthchecks, and nothing private published."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from tests.conftest import REPO

COMPOSE = REPO / "docker-compose.yml"
SERVICES = {
    "redis", "weaviate", "ollama", "gateway", "scraper", "indexer",
    "retriever", "reranker", "mapper", "reducer", "flower", "watcher",
}  # fmt: skip
PUBLISHED = {"gateway", "flower"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_declares_every_service_with_a_healthcheck(compose: dict) -> None:
    services = compose["services"]
    assert set(services) == SERVICES
    for name, service in services.items():
        assert "healthcheck" in service, f"{name} has no healthcheck"


def test_only_gateway_and_flower_are_published_and_only_on_loopback_by_default(compose: dict) -> None:
    for name, service in compose["services"].items():
        ports = service.get("ports", [])
        if name not in PUBLISHED:
            assert not ports, f"{name} must not be published to the host"
        for port in ports:
            assert port.startswith("${HINDSIGHT_") and ":-127.0.0.1}" in port, port


def test_scalable_workers_have_no_fixed_container_name(compose: dict) -> None:
    for name in ("reranker", "mapper", "retriever", "indexer"):
        assert "container_name" not in compose["services"][name]


def test_state_lives_in_named_volumes(compose: dict) -> None:
    volumes = set(compose["volumes"])
    assert {"redis-data", "weaviate-data", "ollama-models", "hindsight-data"} <= volumes


def test_docker_compose_config_accepts_the_file() -> None:
    if (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        command = ["docker", "compose", "config", "-q"]
    elif shutil.which("docker-compose"):
        command = ["docker-compose", "config", "-q"]
    else:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_local_redis_persists_like_compose_so_a_restart_loses_no_queued_task(compose: dict) -> None:
    from cli.local_stack import REDIS_PERSISTENCE

    command = compose["services"]["redis"]["command"]
    assert command[0] == "redis-server"
    assert tuple(command[1:]) == REDIS_PERSISTENCE
    assert command[command.index("--appendonly") + 1] == "yes"
