"""The import rules of ``[tool.importlinter]`` in pyproject.toml hold: services independent of each
other, shared/ below everything, the CLI a client, no import cycle in any package; and tests take
their helpers from testing/ or a conftest.py, never from another test module."""

from __future__ import annotations

import ast
import os
import re
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


def test_no_test_module_imports_from_another_test_module() -> None:
    test_module = re.compile(r"^tests(\.\w+)*\.test_\w+$")
    found = [
        f"{path.relative_to(REPO)}: from {node.module} import"
        for path in sorted((REPO / "tests").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and test_module.match(node.module or "")
    ]
    assert found == []
