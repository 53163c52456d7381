"""Each service image's entry points import with only what its Dockerfile stage installs, and the
model stage builds the models from only the files it copies.

An image installs the project's base dependencies and its own pyproject extras (Dockerfile's
``pip install ".[gateway,cli]"`` and so on); the test venv has every extra, so a stray import of a
package another service needs passes every other test and fails only in the compose stack. Here each
image's entry modules are imported in a fresh interpreter where every installed package outside
that image's dependency closure raises ``ModuleNotFoundError`` as it would in the image.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

# image -> (the extras its Dockerfile stage installs, the modules its commands start from)
IMAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "gateway": (("gateway", "cli"), ("services.gateway.__main__", "cli.main")),
    "scraper": (("scraper",), ("shared.worker", "services.scraper.tasks")),
    "indexer": (("indexer",), ("shared.worker", "services.indexer.tasks", "services.indexer.watcher")),
    "retriever": (("retriever",), ("shared.worker", "services.retriever.tasks")),
    "reranker": (("reranker",), ("shared.worker", "services.reranker.tasks")),
    "synthesizer": (("synthesizer",), ("shared.worker", "services.synthesizer.tasks")),
}

IMPORT_WITH_BLOCKED = """
import importlib, importlib.abc, json, sys
blocked = set(json.loads(sys.argv[1]))
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed in this image)", name=name)
        return None
sys.meta_path.insert(0, Absent())
for module in sys.argv[2:]:
    importlib.import_module(module)
"""


def _project_requirements(extras: tuple[str, ...]) -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(text) for text in project["dependencies"]]
    pending = list(extras)
    seen: set[str] = set()
    while pending:
        extra = pending.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in project["optional-dependencies"][extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == canonicalize_name(project["name"]):
                pending.extend(requirement.extras)
            else:
                wanted.append(requirement)
    return wanted


def _installed_closure(requirements: list[Requirement]) -> set[str]:
    """The canonical names of the installed distributions these requirements pull in, each
    distribution's requested extras followed (``celery[redis]`` pulls ``kombu[redis]``)."""
    closure: set[str] = set()
    followed: set[tuple[str, str]] = set()
    pending = [
        (requirement.name, extra) for requirement in requirements for extra in ("", *requirement.extras)
    ]
    while pending:
        name, extra = pending.pop()
        name = canonicalize_name(name)
        if (name, extra) in followed:
            continue
        followed.add((name, extra))
        try:
            dependencies = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        closure.add(name)
        for text in dependencies:
            child = Requirement(text)
            if child.marker and not child.marker.evaluate({"extra": extra}):
                continue
            pending.extend((child.name, child_extra) for child_extra in ("", *child.extras))
    return closure


def _modules_outside(closure: set[str]) -> set[str]:
    owners = metadata.packages_distributions()
    project_modules = {"shared", "services", "cli", "provisioning", "pipeline", "testing", "bench", "tests"}
    return {
        module
        for module, distributions in owners.items()
        if module not in project_modules
        and not any(canonicalize_name(dist) in closure for dist in distributions)
    }


@pytest.mark.parametrize("image", sorted(IMAGES))
def test_an_images_entry_modules_import_with_only_its_own_dependencies(image: str) -> None:
    extras, modules = IMAGES[image]
    blocked = _modules_outside(_installed_closure(_project_requirements(extras)))
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_WITH_BLOCKED, json.dumps(sorted(blocked)), *modules],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{image} image: {result.stderr[-2000:]}"


def test_the_blocking_catches_a_package_outside_the_gateway_image() -> None:
    blocked = _modules_outside(_installed_closure(_project_requirements(("gateway", "cli"))))
    assert {"tokenizers", "onnxruntime", "lancedb"} <= blocked
    assert not {"fastapi", "pydantic", "celery", "typer"} & blocked


# The test venv has the project installed editable, whose import finder would find any module the
# stage did not copy in the checkout; the image has no such install.
WITHOUT_THE_EDITABLE_INSTALL = (
    "import sys\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in getattr(f, '__module__', '')]\n"
    "sys.path_hooks[:] = [h for h in sys.path_hooks if '__editable__' not in getattr(h, '__module__', '')]\n"
    "sys.path_importer_cache.clear()\n"
)


def _model_stage_copies() -> list[str]:
    """The sources the Dockerfile's model-tools stage copies (its ``COPY`` lines' sources)."""
    stage = (REPO / "Dockerfile").read_text().split("AS model-tools", 1)[1].split("\nFROM ", 1)[0]
    return [src for line in stage.splitlines() if line.startswith("COPY ") for src in line.split()[1:-1]]


def test_the_model_stage_builds_the_models_from_only_the_files_it_copies(tmp_path: Path) -> None:
    for source in _model_stage_copies():
        target = tmp_path / source
        target.parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (REPO / source).is_dir() else shutil.copyfile
        copy(REPO / source, target)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            WITHOUT_THE_EDITABLE_INSTALL + "import provisioning.embedder, provisioning.reranker",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"the model stage would fail: {result.stderr[-2000:]}"
