"""Each image's dependencies, checked without Docker: a clean venv with exactly that image's pyproject
extras and the code its Dockerfile target copies starts each compose service's process the way the
container would, with that service's compose environment, in both profiles.

"Starts" means: import the worker (or gateway, watcher, Flower) module, run the worker's start-up
signals, and build every backend (store, embedder, chat model) the module takes from
``shared.backends``, with ``/models`` holding only the models the image copies. A missing module or
model file fails; a backend server that is not running here (Weaviate, Ollama) is expected and
passes, since only what the image carries is in question.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.compose import clean_venv
from tests.compose.deployment import PROFILES, Image, Service, compose_services, images
from tests.conftest import REPO, require_embedder

PROBE = r"""
import importlib, importlib.util, json, logging, sys
failures = []
MISSING = (ImportError, FileNotFoundError)  # a module, or a model file, the image does not have

class ImportFailures(logging.Handler):
    def emit(self, record):
        if record.exc_info and isinstance(record.exc_info[1], MISSING):
            failures.append(f"{record.getMessage()}: {record.exc_info[1]!r}")

logging.getLogger().addHandler(ImportFailures())
name = sys.argv[1]
if importlib.util.find_spec(name).submodule_search_locations:  # `python -m package` runs its __main__
    name += ".__main__"
module = importlib.import_module(name)
for extra in sys.argv[2:]:
    importlib.import_module(extra)
from celery.signals import worker_process_init, worker_ready
from shared import backends
worker_process_init.send(sender=None)
worker_ready.send(sender=None)
built = {}
for getter in ("get_embedder", "get_store", "get_llm"):
    if getattr(module, getter, None) is getattr(backends, getter):
        try:
            built[getter] = type(getattr(backends, getter)()).__name__
        except MISSING as exc:
            failures.append(f"{getter}: {exc!r}")
        except Exception as exc:  # a backend server not running here: the imports are what is checked
            built[getter] = f"unreachable ({type(exc).__name__})"
print(json.dumps({"failures": failures, "built": built}))
"""
# The folder each model stage fills under /models.
MODEL_FOLDERS = {"embedder": "all-MiniLM-L6-v2", "reranker": "ms-marco-MiniLM-L-6-v2"}


@pytest.fixture(scope="module")
def image_venvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, Path]]:
    """Per image: (python of a venv with its extras only, a folder with only the code it copies, a
    models folder with only the models it copies)."""
    built = {}
    for target, image in images().items():
        folder = tmp_path_factory.mktemp(target)
        python = clean_venv.build(folder / "venv", clean_venv.closure(image.extras, image.requirements))
        built[target] = (python, copied_code(image, folder / "app"), copied_models(image, folder / "models"))
    return built


def copied_models(image: Image, models: Path) -> Path:
    """``/models`` as the target's model stages fill it (links to this machine's provisioned models)."""
    models.mkdir()
    for stage in image.models:
        found = MODEL_FOLDERS[stage]
        (models / found).symlink_to(require_embedder() / found)
    return models


def copied_code(image: Image, app: Path) -> Path:
    """``/app`` as the target's COPY lines make it (symlinks to this checkout)."""
    for source in image.code:
        if source.startswith("deploy/worker-entrypoint"):
            continue
        link = app / source
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REPO / source)
    return app


def container_environment(service: Service, models: Path, tmp_path: Path) -> dict[str, str]:
    """The service's compose environment, its container paths mapped to folders here."""
    local = {"/data": tmp_path / "data", "/models": models, "/library": tmp_path / "library"}
    for folder in local.values():
        folder.mkdir(exist_ok=True)
    environment = {}
    for key, value in service.environment.items():
        for container, here in local.items():
            if value == container or value.startswith(container + "/"):
                value = str(here) + value[len(container) :]
        environment[key] = value
    environment["HINDSIGHT_REDIS_URL"] = "redis://127.0.0.1:9/0"  # nothing listens: no broker is needed
    return environment


SERVICES = [(profile, name) for profile in PROFILES for name in sorted(compose_services(profile))]


def test_every_runtime_image_installs_one_extra_set_and_no_build_tools() -> None:
    found = images()
    assert set(found) == {"gateway", "scraper", "indexer", "retriever", "reranker", "synthesizer", "flower"}
    for image in found.values():
        closure = clean_venv.closure(image.extras, image.requirements)
        assert not closure & {"torch", "transformers", "onnx", "sentence-transformers"}, image.target


@pytest.mark.parametrize(("profile", "name"), SERVICES, ids=[f"{p}-{n}" for p, n in SERVICES])
def test_service_starts_in_a_venv_with_only_its_images_extras(
    profile: str, name: str, image_venvs: dict[str, tuple[Path, Path, Path]], tmp_path: Path
) -> None:
    service = compose_services(profile)[name]
    python, app, models = image_venvs[service.target]
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(app),
        **container_environment(service, models, tmp_path),
    }
    # Flower runs as a Celery sub-command: its package must import too.
    plugins = ["flower.command"] if "flower" in service.command else []
    result = subprocess.run(
        [str(python), "-c", PROBE, service.module, *plugins],
        cwd=app, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["failures"] == [], outcome
