"""N8 and N9: concurrent key changes never lose one another nor corrupt the key file; the CLI's key is
never on a command line (which every local user sees in ``ps``) nor printed again after it was made."""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from shared.api_keys import KeyFile
from tests.conftest import REPO

PAIRS = 60


def revoke_and_create(job: tuple[str, str, int]) -> str:
    """One process's revoke of an old key and creation of a new one, as `hindsight keys` does."""
    path, old_id, number = job
    keys = KeyFile(Path(path))
    keys.revoke(old_id)
    return keys.create(f"new-{number}")[1]


def test_concurrent_revokes_and_creates_lose_nothing_and_never_corrupt_the_file(tmp_path: Path) -> None:
    path = tmp_path / "api_keys.json"
    keys = KeyFile(path)
    old = [keys.create(f"old-{i}") for i in range(PAIRS)]
    with multiprocessing.get_context("fork").Pool(8) as pool:
        new = pool.map(revoke_and_create, [(str(path), record.id, i) for i, (record, _) in enumerate(old)])
    fresh = KeyFile(path)
    assert len(fresh.list()) == 2 * PAIRS
    for record, key in old:
        assert fresh.check(key).reason == f"API key {record.id} was revoked", "a revoked key works again"
    assert all(fresh.check(key).record is not None for key in new)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["api_keys.json", "api_keys.json.lock"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def cli(env: dict[str, str], *code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "HINDSIGHT_DATA_DIR": str(tmp_path / "data")}


def test_open_puts_no_key_on_the_browsers_command_line(cli_env: dict[str, str], tmp_path: Path) -> None:
    argv_log = tmp_path / "browser-argv"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$@" > {argv_log}\n')
    browser.chmod(0o755)
    key = KeyFile(tmp_path / "data" / "api_keys.json").create("local-cli")[1]
    (tmp_path / "data" / "cli.key").write_text(key + "\n")
    result = cli({**cli_env, "BROWSER": str(browser)}, "-m", "cli.main", "open")
    assert result.returncode == 0, result.stderr
    argv = argv_log.read_text().strip()
    assert key not in argv and key not in result.stdout
    page = Path(argv.removeprefix("file://"))
    assert page.parent == tmp_path / "data" / "run"
    assert f"#key={key}" in page.read_text()
    assert stat.S_IMODE(page.stat().st_mode) == 0o600
    if os.geteuid() == 0:
        peek = subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(page)], capture_output=True)
        assert peek.returncode != 0


def test_the_key_is_printed_when_made_and_never_on_a_later_start(cli_env: dict[str, str]) -> None:
    show = "from cli.actions.stack import describe_access; from cli.local_key import ensure_local_key; "
    show += "from shared.settings import get_settings; describe_access(ensure_local_key(get_settings()))"
    first, later = cli(cli_env, "-c", show), cli(cli_env, "-c", show)
    key = (Path(cli_env["HINDSIGHT_DATA_DIR"]) / "cli.key").read_text().strip()
    assert f"#key={key}" in first.stdout.replace("\n", "")
    assert key not in later.stdout.replace("\n", "") and "`hindsight open`" in later.stdout


def test_a_key_name_with_markup_or_escapes_is_printed_as_text_by_create_list_and_revoke(
    cli_env: dict[str, str],
) -> None:
    """A key's name is printed by ``keys create``, ``keys list`` and ``keys revoke``: ``[/red]`` in it
    was a rich ``MarkupError`` traceback, and an escape sequence would have reached the terminal."""
    name = "ci [/red] \x1b]0;title\x07 bot"
    created = cli(cli_env, "-m", "cli.main", "keys", "create", "--name", name)
    key_id = KeyFile(Path(cli_env["HINDSIGHT_DATA_DIR"]) / "api_keys.json").list()[0].id
    listed = cli({**cli_env, "COLUMNS": "200"}, "-m", "cli.main", "keys", "list")
    revoked = cli(cli_env, "-m", "cli.main", "keys", "revoke", key_id)
    for done in (created, listed, revoked):
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert "ci [/red] \ufffd]0;title\ufffd bot" in done.stdout and "\x1b]" not in done.stdout
