"""What the Dockerfile and the compose files declare, read the way Docker reads them: each image's
pyproject extras and copied code, each compose service's image, command and environment per profile."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from shared.worker import container_argv
from tests.conftest import REPO

DOCKERFILE = REPO / "Dockerfile"
EMBEDDED = REPO / "docker-compose.yml"
FULL = REPO / "docker-compose.full.yml"
PROFILES: dict[str, tuple[Path, ...]] = {"embedded": (EMBEDDED,), "full": (EMBEDDED, FULL)}


@dataclass(frozen=True)
class Image:
    """A runtime target of the Dockerfile: the extras its venv holds, the code it copies to /app and
    the model stages (``embedder``, ``reranker``) whose ``/models`` it copies."""

    target: str
    extras: tuple[str, ...]
    requirements: tuple[str, ...]
    code: tuple[str, ...]
    models: tuple[str, ...]
    command: tuple[str, ...]


@dataclass(frozen=True)
class Service:
    """A compose service that runs one of the project's images."""

    name: str
    target: str
    command: tuple[str, ...]
    environment: dict[str, str]

    @property
    def module(self) -> str:
        """The module its process starts: ``celery -A <module>``, the worker's module for ``python -m
        shared.worker <name>``, or ``python -m <module>``."""
        command = list(
            container_argv(self.command[3], [], {})
            if self.command[1:3] == ("-m", "shared.worker")
            else self.command
        )
        flag = "-A" if "celery" in command else "-m"
        return command[command.index(flag) + 1]


def _stages() -> dict[str, list[str]]:
    """Each Dockerfile stage's instructions (continuation lines joined)."""
    stages: dict[str, list[str]] = {}
    current: list[str] = []
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    for line in text.splitlines():
        if found := re.match(r"FROM \S+ AS (\S+)", line):
            current = stages.setdefault(found.group(1), [])
        elif line and not line.startswith("#"):
            current.append(line)
    return stages


def images() -> dict[str, Image]:
    """The runtime targets (those with a CMD), each with what its ``<target>-deps`` stage installs."""
    stages = _stages()
    found = {}
    for target, lines in stages.items():
        commands = [yaml.safe_load(line[4:]) for line in lines if line.startswith("CMD ")]
        if not commands:
            continue
        install = next(line for line in stages[f"{target}-deps"] if "pip install" in line)
        words = shlex.split(install[install.index("pip install") + len("pip install") :].split("&&")[0])
        project = next(w for w in words if w.startswith("."))
        extras = re.findall(r"\[(.*)\]", project)
        copies = [
            shlex.split(line)[1:] for line in lines if line.startswith("COPY ") and "--from" not in line
        ]
        models = [m for line in lines for m in re.findall(r"^COPY --from=(\S+)-model /models ", line)]
        found[target] = Image(
            target=target,
            extras=tuple(extras[0].split(",")) if extras else (),
            requirements=tuple(w for w in words if not w.startswith((".", "-"))),
            code=tuple(source for *sources, _ in copies for source in sources),
            models=tuple(models),
            command=tuple(commands[-1]),
        )
    return found


def compose_services(profile: str) -> dict[str, Service]:
    """The compose services built from the Dockerfile, as ``docker compose`` merges the profile's files."""
    merged: dict[str, dict] = {}
    for path in PROFILES[profile]:
        for name, service in yaml.safe_load(path.read_text())["services"].items():
            into = merged.setdefault(name, {})
            for key, value in service.items():
                if isinstance(value, dict) and isinstance(into.get(key), dict):
                    into[key] = {**into[key], **value}
                else:
                    into[key] = value
    built = images()
    services = {}
    for name, service in merged.items():
        if "build" not in service:
            continue
        target = service["build"]["target"]
        command = service.get("command") or built[target].command
        environment = {k: interpolated(str(v)) for k, v in (service.get("environment") or {}).items()}
        services[name] = Service(name, target, tuple(command), environment)
    return services


def interpolated(value: str) -> str:
    """``${NAME:-default}`` as compose reads it with ``NAME`` unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)
