"""The compose files and the build context, read as Docker reads them: both profiles declare the
services the architecture names with healthchecks, publish nothing private, share the data each
service needs, and send the daemon no local state."""

from __future__ import annotations

import fnmatch
import os
import subprocess

import pytest
import yaml

from tests.compose.deployment import EMBEDDED, FULL, PROFILES
from tests.compose.docker_stack import compose_command
from tests.conftest import REPO

PROJECT_SERVICES = {
    "gateway", "scraper", "indexer", "watcher", "retriever", "reranker", "mapper", "reducer", "flower",
}  # fmt: skip
PROFILE_SERVICES = {
    "embedded": PROJECT_SERVICES | {"redis"},
    "full": PROJECT_SERVICES | {"redis", "weaviate", "ollama"},
}
PUBLISHED = {"gateway", "flower"}


def merged(profile: str) -> dict:
    """``docker compose config`` of the profile's files, or a skip where compose is not installed."""
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    files = [arg for path in PROFILES[profile] for arg in ("-f", str(path))]
    env = {**os.environ, "REDIS_PASSWORD": "compose-config-check"}
    result = subprocess.run([*command, *files, "config"], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_declares_its_services_each_with_a_healthcheck(profile: str) -> None:
    services = merged(profile)["services"]
    assert set(services) == PROFILE_SERVICES[profile]
    for name, service in services.items():
        assert "healthcheck" in service, f"{name} has no healthcheck"


@pytest.mark.parametrize("profile", PROFILES)
def test_only_gateway_and_flower_are_published_and_only_on_loopback_by_default(profile: str) -> None:
    for name, service in merged(profile)["services"].items():
        ports = service.get("ports", [])
        assert bool(ports) == (name in PUBLISHED), name
        if ports:  # published from inside the container: it listens on every interface there
            address = service["environment"].get("HINDSIGHT_GATEWAY_HOST") or service["environment"].get(
                "HINDSIGHT_FLOWER_ADDRESS"
            )
            assert address == "0.0.0.0", name
        for port in ports:  # docker-compose 1.x prints the short syntax, docker compose v2 the long one
            host_ip = port.get("host_ip", "") if isinstance(port, dict) else port.split(":")[0]
            assert host_ip == "127.0.0.1", f"{name}: {port}"


def test_embedded_profile_keeps_all_on_the_machine_and_the_full_one_uses_weaviate_and_ollama() -> None:
    embedded, full = merged("embedded")["services"], merged("full")["services"]
    for name in PROJECT_SERVICES - {"flower"}:
        assert embedded[name]["environment"]["HINDSIGHT_STORE"] == "lancedb", name
        assert embedded[name]["environment"]["HINDSIGHT_EMBEDDER"] == "onnx", name
        assert full[name]["environment"]["HINDSIGHT_STORE"] == "weaviate", name
        assert full[name]["environment"]["HINDSIGHT_EMBEDDER"] == "ollama", name
    assert {"weaviate", "ollama"} <= set(full["retriever"]["depends_on"])
    assert not {"weaviate", "ollama"} & set(embedded["retriever"]["depends_on"])


def mounts(service: dict) -> dict[str, tuple[str, bool]]:
    """Mount point -> (source, read-only) of a ``config``-normalised service (short or long syntax)."""
    found = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            found[volume["target"]] = (volume["source"], bool(volume.get("read_only")))
        else:
            source, target, *mode = volume.split(":")
            found[target] = (source, "ro" in mode)
    return found


@pytest.mark.parametrize("profile", PROFILES)
def test_the_store_volume_is_shared_and_the_library_is_mounted_where_it_is_read(profile: str) -> None:
    services = merged(profile)["services"]
    for name in ("gateway", "indexer", "retriever", "watcher", "scraper"):
        found = mounts(services[name])
        assert found.get("/data", ("", False))[0].endswith("hindsight-data"), f"{name}: {found}"
        assert "/library" in found, f"{name} cannot read the library"
    assert mounts(services["gateway"])["/library"][1], "the gateway only reads the library"


def test_scalable_workers_have_no_fixed_container_name_and_a_node_name_of_their_own() -> None:
    spec = yaml.safe_load(EMBEDDED.read_text())
    for name in ("reranker", "mapper", "retriever", "indexer", "reducer"):
        service = spec["services"][name]
        assert "container_name" not in service and "hostname" not in service
        assert "/tmp/celery-node-host" in service["healthcheck"]["test"][-1]
    dockerfile = (REPO / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["hindsight-worker"]' in dockerfile


def test_state_lives_in_named_volumes() -> None:
    assert {"redis-data", "hindsight-data"} <= set(yaml.safe_load(EMBEDDED.read_text())["volumes"])
    assert {"weaviate-data", "ollama-models"} <= set(yaml.safe_load(FULL.read_text())["volumes"])


def test_the_build_context_leaves_out_virtualenvs_local_state_and_caches() -> None:
    patterns = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and line[0] != "#"]

    def sent(path: str) -> bool:
        """Docker's rule: the last pattern matching the path or a folder above it decides."""
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        keep = True
        for pattern in patterns:
            if any(fnmatch.fnmatch(prefix, pattern.lstrip("!")) for prefix in prefixes):
                keep = pattern.startswith("!")
        return keep

    for private in (
        ".venv/bin/python",
        ".hindsight/api_keys.json",
        ".git/config",
        "shared/__pycache__/x.pyc",
    ):
        assert not sent(private), private
    for needed in (
        "pyproject.toml",
        "shared/settings.py",
        "services/gateway/app.py",
        "deploy/worker-entrypoint.sh",
    ):
        assert sent(needed), needed


def test_local_redis_persists_like_compose_so_a_restart_loses_no_queued_task() -> None:
    from cli.local_stack import REDIS_PERSISTENCE

    command = yaml.safe_load(EMBEDDED.read_text())["services"]["redis"]["command"]
    assert command[:2] == ["sh", "-c"] and "exec redis-server" in command[2]
    assert tuple(command[-len(REDIS_PERSISTENCE) :]) == REDIS_PERSISTENCE
    assert command[command.index("--appendonly") + 1] == "yes"


def test_redis_needs_a_password_that_every_service_uses_and_compose_refuses_to_start_without_it() -> None:
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_PASSWORD"}
    refused = subprocess.run([*command, "config"], cwd=REPO, env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "set REDIS_PASSWORD in .env" in refused.stderr
    services = merged("embedded")["services"]
    urls = [s["environment"].get("HINDSIGHT_REDIS_URL") for s in services.values() if s.get("environment")]
    urls = [u for u in urls if u is not None]
    assert urls and all(u.startswith("redis://:compose-config-check@redis:") for u in urls), urls
    redis = services["redis"]
    assert "requirepass" in redis["command"][2] and "compose-config-check" not in " ".join(redis["command"])
