"""The import rules of ``[tool.importlinter]`` in pyproject.toml hold: services independent of each
other, shared/ below everything, the CLI a client, no import cycle in any package; and tests take
their helpers from testing/ or a conftest.py, never from another test module."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import shutil
import subprocess
from pathlib import Path

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


# Entry points: the modules that build a service (or the CLI, or a benchmark) from the environment
# may take the whole ``Settings``; every other function receives only its group(s) of
# shared/settings.py and plain values (a path, a URL).
WHOLE_SETTINGS_ALLOWED = (
    "shared/settings.py",  # the settings themselves
    "shared/backends.py",  # the store, embedder and LLM each process builds
    "services/*/tasks.py",  # each service's Celery edge
    "services/gateway/app.py",  # the gateway's app factory
    "services/gateway/deps.py",
    "pipeline/question.py",  # the in-process pipeline's parts
    "cli/*",  # command functions, the local stack and the CLI's key
    "bench/*",  # benchmark scripts
)


def functions_taking_whole_settings(path: Path, root: Path = REPO) -> list[str]:
    """``path:line function`` (``path`` relative to ``root``) for each function in ``path`` with a
    parameter annotated ``Settings``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        arguments = node.args
        for parameter in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            annotation = parameter.annotation
            names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)} if annotation else set()
            texts = (
                {n.value for n in ast.walk(annotation) if isinstance(n, ast.Constant)}
                if annotation
                else set()
            )
            if "Settings" in names or any(re.search(r"\bSettings\b", str(text)) for text in texts):
                name = getattr(node, "name", "<lambda>")
                found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_only_entry_points_take_the_whole_settings() -> None:
    """A function outside the entry points receives its settings group, not every service's settings."""
    found = [
        function
        for package in ["shared", "services", "provisioning", "pipeline", "testing", "cli", "bench"]
        for path in sorted((REPO / package).rglob("*.py"))
        if not any(
            fnmatch.fnmatch(str(path.relative_to(REPO)), allowed) for allowed in WHOLE_SETTINGS_ALLOWED
        )
        for function in functions_taking_whole_settings(path)
    ]
    assert found == []


def test_the_whole_settings_check_finds_a_function_taking_them(tmp_path: Path) -> None:
    """The check above can fail: a parameter annotated ``Settings`` (plain or quoted) is found."""
    module = tmp_path / "probe.py"
    module.write_text(
        "def f(settings: Settings, n: int) -> None: ...\ndef g(s: 'Settings | None') -> None: ...\n"
    )
    assert functions_taking_whole_settings(module, tmp_path) == ["probe.py:1 f", "probe.py:2 g"]
