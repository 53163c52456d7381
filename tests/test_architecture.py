"""The import rules of ``[tool.importlinter]`` in pyproject.toml hold: services independent of each
other, shared/ below everything, the CLI a client, no import cycle in any package."""

from __future__ import annotations

import os
import shutil
import subprocess

from tests.conftest import REPO


def test_imports_follow_the_architecture_and_have_no_cycles() -> None:
    lint_imports = shutil.which("lint-imports")
    assert lint_imports, "lint-imports not found: pip install -e '.[dev]'"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [lint_imports, "--no-cache"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
