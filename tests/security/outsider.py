"""The outsider of the local-user attacks: the unprivileged ``nobody`` account, through ``runuser``
(the tests that use it need root, as CI runs them)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

NOBODY = ["runuser", "-u", "nobody", "--"]


def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` run as ``nobody``."""
    return subprocess.run([*NOBODY, *argv], capture_output=True, text=True, timeout=30)


def nobody_shell(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``sh -c script`` run as ``nobody``, with ``args`` as ``$1``, ``$2``…"""
    return as_nobody("sh", "-c", script, "sh", *args)


def system_python() -> str:
    """The system's Python, which ``nobody`` may run (this venv's may live under root's home)."""
    found = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if found is None:
        pytest.skip("no system python3 for the nobody user")
    return found
