"""Build the project's images and run the embedded compose stack on loopback, for the smoke test.

Every container uses the host's network (machines without a bridge network run it the same way), so
the generated compose file moves Redis, the gateway and Flower to free loopback ports, drops
``ports:`` (compose refuses them on the host network) and names the images built here. The library
is a copy of ``samples/``.

``HINDSIGHT_DOCKER`` picks the Docker client (one that builds with BuildKit); ``HINDSIGHT_TORCH_INDEX_URL``
and ``HINDSIGHT_RERANKER_SOURCE`` become the build arguments.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import httpx
import yaml

from testing.processes import free_port
from tests.compose.deployment import EMBEDDED
from tests.conftest import REPO

T = TypeVar("T")
TAG = "smoke"


def docker() -> str:
    return os.environ.get("HINDSIGHT_DOCKER", "docker")


def compose_command() -> list[str] | None:
    """``docker compose`` where the plugin exists, else Debian's ``docker-compose``; None if neither."""
    if subprocess.run([docker(), "compose", "version"], capture_output=True).returncode == 0:
        return [docker(), "compose"]
    return [found] if (found := shutil.which("docker-compose")) else None


def daemon_problem() -> str | None:
    """Why no stack can run here, or None when a daemon answers and compose exists."""
    if not shutil.which(docker()):
        return f"no Docker client ({docker()})"
    info = subprocess.run([docker(), "info"], capture_output=True, text=True)
    if info.returncode != 0:
        return f"no Docker daemon answers: {info.stderr.strip().splitlines()[-1:]}"
    if compose_command() is None:
        return "neither `docker compose` nor `docker-compose` is installed"
    return None


def build_image(target: str) -> float:
    """Build ``hindsight-<target>:smoke``; returns the seconds it took."""
    arguments = {
        "TORCH_INDEX_URL": os.environ.get("HINDSIGHT_TORCH_INDEX_URL"),
        "RERANKER_SOURCE": os.environ.get("HINDSIGHT_RERANKER_SOURCE"),
    }
    command = [docker(), "build", "--network", "host", "--target", target, "-t", f"hindsight-{target}:{TAG}"]
    for name, value in arguments.items():
        if value:
            command += ["--build-arg", f"{name}={value}"]
    started = time.monotonic()
    result = subprocess.run(
        [*command, str(REPO)], env={**os.environ, "DOCKER_BUILDKIT": "1"}, capture_output=True, text=True
    )
    assert result.returncode == 0, (
        f"building {target} failed:\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
    )
    return round(time.monotonic() - started, 1)


def image_mb(target: str) -> float:
    size = subprocess.run(
        [docker(), "image", "inspect", "--format", "{{.Size}}", f"hindsight-{target}:{TAG}"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return round(int(size) / 1e6, 1)


def run_in_image(target: str, *command: str) -> subprocess.CompletedProcess[str]:
    """``command`` in a fresh container of ``hindsight-<target>:smoke``, through its entry point."""
    return subprocess.run(
        [docker(), "run", "--rm", "--network", "host", f"hindsight-{target}:{TAG}", *command],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float, every_s: float = 2.0) -> T:
    """Poll ``probe`` until it returns something, or fail saying what never happened."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (value := probe()) is not None:
            return value
        time.sleep(every_s)
    raise AssertionError(f"{what} did not happen within {timeout_s:.0f}s")


@dataclass
class Stack:
    """The embedded profile on loopback: its ports, credentials and compose project."""

    folder: Path
    project: str = field(default_factory=lambda: f"hindsight-smoke-{os.getpid()}")
    redis_port: int = field(default_factory=free_port)
    gateway_port: int = field(default_factory=free_port)
    flower_port: int = field(default_factory=free_port)
    flower_auth: str = field(default_factory=lambda: f"smoke:{secrets.token_urlsafe(12)}")
    redis_password: str = field(default_factory=lambda: secrets.token_hex(16))
    key: str = ""

    @property
    def gateway(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    @property
    def flower(self) -> str:
        return f"http://127.0.0.1:{self.flower_port}"

    @property
    def library(self) -> Path:
        return self.folder / "library"

    def write(self) -> Path:
        """The compose file: docker-compose.yml on the host network with this stack's ports."""
        shutil.copytree(REPO / "samples", self.library)
        spec = yaml.safe_load(EMBEDDED.read_text())
        redis_url = f"redis://:{self.redis_password}@127.0.0.1:{self.redis_port}/0"
        for name, service in spec["services"].items():
            service["network_mode"] = "host"
            service.pop("ports", None)
            if build := service.pop("build", None):
                service["image"] = f"hindsight-{build['target']}:{TAG}"
            service["volumes"] = [
                str(self.library) + v[v.index(":/library") :] if ":/library" in v else v
                for v in service.get("volumes", [])
            ]
            environment = service.get("environment")
            if environment is not None:
                service["environment"] = {**environment, "HINDSIGHT_REDIS_URL": redis_url}
            if name == "redis":
                service["command"] += ["--port", str(self.redis_port), "--bind", "127.0.0.1"]
                service["healthcheck"]["test"][-1] = service["healthcheck"]["test"][-1].replace(
                    "redis-cli ping", f"redis-cli -p {self.redis_port} ping"
                )
        gateway, flower = spec["services"]["gateway"], spec["services"]["flower"]
        gateway["environment"] |= {
            "HINDSIGHT_GATEWAY_HOST": "127.0.0.1",
            "HINDSIGHT_GATEWAY_PORT": str(self.gateway_port),
        }
        gateway["healthcheck"]["test"][-1] = gateway["healthcheck"]["test"][-1].replace(
            ":8000/", f":{self.gateway_port}/"
        )
        flower["environment"] |= {
            "HINDSIGHT_FLOWER_BASIC_AUTH": self.flower_auth,
            "HINDSIGHT_FLOWER_ADDRESS": "127.0.0.1",
            "HINDSIGHT_FLOWER_PORT": str(self.flower_port),
        }
        flower["healthcheck"]["test"][-1] = flower["healthcheck"]["test"][-1].replace(
            ":5555/", f":{self.flower_port}/"
        )
        path = self.folder / "docker-compose.yml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return path

    def compose(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [
            *(compose_command() or []),
            "-p",
            self.project,
            "-f",
            str(self.folder / "docker-compose.yml"),
        ]
        env = {**os.environ, "REDIS_PASSWORD": self.redis_password}
        result = subprocess.run([*command, *arguments], env=env, capture_output=True, text=True, timeout=600)
        if check:
            assert result.returncode == 0, f"compose {' '.join(arguments)}:\n{result.stdout}{result.stderr}"
        return result

    def live(self) -> bool | None:
        """True once the gateway answers ``/healthz`` (liveness)."""
        try:
            return httpx.get(f"{self.gateway}/healthz", timeout=10).status_code == 200 or None
        except httpx.HTTPError:
            return None

    def health(self) -> dict | None:
        """``GET /v1/health`` (Redis, workers per queue, rerankers) once it says ``ok``."""
        try:
            health = httpx.get(f"{self.gateway}/v1/health", headers={"X-API-Key": self.key}, timeout=10)
        except httpx.HTTPError:
            return None
        return health.json() if health.status_code == 200 and health.json()["status"] == "ok" else None

    def create_key(self) -> None:
        """A key made the way the README says: ``hindsight keys create`` in the gateway container."""
        output = self.compose(
            "exec", "-T", "gateway", "hindsight", "keys", "create", "--name", "smoke"
        ).stdout
        self.key = next(line.strip() for line in output.splitlines() if line.strip().startswith("hs_"))
