"""Build time stays apart from run time: no worker, nor the gateway, imports ``provisioning`` or the
build-only libraries (torch, transformers, onnx) it needs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from shared.topology import WORKERS
from tests.conftest import REPO

RUNTIME_MODULES = sorted({w.module for w in WORKERS} | {"services.gateway.app", "services.indexer.watcher"})
BUILD_ONLY = ("provisioning", "torch", "transformers", "onnx")


@pytest.mark.parametrize("module", RUNTIME_MODULES)
def test_runtime_module_loads_nothing_of_provisioning(module: str) -> None:
    probe = (
        f"import json, sys; import {module}; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {BUILD_ONLY!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == [], f"{module} imports build-time modules at run time: {loaded}"
