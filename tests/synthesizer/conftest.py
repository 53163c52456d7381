"""The synthesizer reads a cited file only under the configured roots (``shared.source_text``), as
its workers do: each test's temp folder is the root its files are cited from."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.settings import get_settings


@pytest.fixture(autouse=True)
def roots_are_the_tests_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("HINDSIGHT_ROOTS", str(tmp_path.resolve()))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()
