"""A clean virtualenv holding exactly the distributions a set of pyproject extras needs, built offline
in seconds from this environment's installed copies.

``pip install .[extras]`` is what an image runs; here the same requirement closure is walked through
the installed distributions' metadata (markers evaluated, extras followed) and each distribution's
files are linked into a new venv's site-packages. A module that only another extra brings is then
missing there, as it is in the image.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tomllib
from collections import defaultdict
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

PROJECT = "hindsight"


def _project_extras() -> dict[str, list[str]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {"": project["dependencies"], **project["optional-dependencies"]}


def _wanted(requirement: Requirement, extras: frozenset[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras | {""})


def closure(extras: tuple[str, ...], requirements: tuple[str, ...] = ()) -> set[str]:
    """The installed distributions ``pip install ".[extras]" requirements...`` would install, the
    project itself excepted (its code is copied, not installed)."""
    project = _project_extras()
    pending = [Requirement(f"{PROJECT}[{','.join(extras)}]" if extras else PROJECT)]
    pending += [Requirement(r) for r in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    while pending:
        requirement = pending.pop()
        name, wanted_extras = canonicalize_name(requirement.name), frozenset(requirement.extras)
        if (name, wanted_extras) in seen:
            continue
        seen.add((name, wanted_extras))
        if name == PROJECT:
            for extra in {"", *wanted_extras}:
                pending += [Requirement(r) for r in project[extra]]
            continue
        names.add(name)
        for text in metadata.distribution(name).requires or []:
            child = Requirement(text)
            if _wanted(child, wanted_extras):
                pending.append(child)
    return names


def _installed_files(dist: metadata.Distribution) -> list[tuple[str, ...]]:
    """The distribution's files inside site-packages, as path parts (from its RECORD)."""
    record = dist.read_text("RECORD") or ""
    parts = (tuple(line.rsplit(",", 2)[0].split("/")) for line in record.splitlines() if line)
    return [p for p in parts if p[0] != ".."]


@cache
def _top_level_owners() -> dict[str, set[str]]:
    """Each top-level entry of site-packages and the installed distributions with files under it."""
    owners: dict[str, set[str]] = defaultdict(set)
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        for top in {parts[0] for parts in _installed_files(dist)}:
            owners[top].add(name)
    return owners


def build(target: Path, distributions: set[str]) -> Path:
    """A venv at ``target`` whose site-packages holds ``distributions`` only; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    python = target / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    site = Path(purelib)
    source = Path(sysconfig.get_paths()["purelib"])
    owners = _top_level_owners()
    for name in sorted(distributions):
        for file in _installed_files(metadata.distribution(name)):
            # An entry only this distribution uses is linked whole; a shared one (a namespace
            # package) file by file, so no other distribution's modules come along.
            parts = file[:1] if owners[file[0]] == {name} else file
            link = site.joinpath(*parts)
            if not link.exists() and not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(source.joinpath(*parts))
    return python
