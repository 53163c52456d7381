"""N3, N4, N5: another local user who may write a root's parent, or a watched folder, swaps a folder for
a link (or another folder) to lead the indexer, the watcher or the evidence view elsewhere.

The attacker is the unprivileged ``nobody`` account, acting on folders it may write, as the red team
did: ``mv team team.old; ln -s /elsewhere team``; a link to ``/usr`` dropped into a watched folder; a
subfolder swapped for a link again and again while a scan walks the tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from services.indexer.discovery import UnlistableFolderError, discover
from services.indexer.pipeline import begin_scan, sync_root
from services.indexer.watcher import watched_roots
from shared.contracts import IndexRequest
from shared.embedding import OnnxEmbedder
from shared.folder_watch import RootWatcher
from shared.index_jobs import WatchRegistry, allowed_roots, register_root
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from testing.processes import wait_for
from tests.conftest import REPO, require_embedder
from tests.security.outsider import NOBODY, nobody_shell, system_python

pytestmark = pytest.mark.integration


@pytest.fixture
def shared_place() -> Iterator[Path]:
    """A folder every user may traverse (``/tmp/…``, 0755), with ``shared/`` that ``nobody`` owns
    (a team's shared parent) and ``secret/`` (0700, a 0600 file) that only root may read."""
    if os.geteuid() != 0:
        pytest.skip("switching to the nobody user needs root")
    base = Path(tempfile.mkdtemp(prefix="hindsight-sec-"))
    base.chmod(0o755)
    shared = base / "shared"
    shared.mkdir()
    shutil.chown(shared, "nobody")
    secret = base / "secret"
    secret.mkdir(mode=0o700)
    private = secret / "private.md"
    private.write_text("# Private\n\nThe root password of the lab server is PRIVATE-SECRET-42.\n")
    private.chmod(0o600)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def team(shared_place: Path) -> Path:
    """The user's folder in the shared parent (the user's own files, readable by the user)."""
    folder = shared_place / "shared" / "team"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe starter doubles in four hours.\n")
    return folder


@pytest.fixture
def pinned(tmp_path: Path, team: Path) -> Settings:
    settings = Settings(data_dir=tmp_path / "data", models_dir=require_embedder(), max_file_bytes=200_000)
    register_root(settings.roots_file, team)  # as `hindsight index team` does
    return settings


def scan(root: Path, store: LanceDBStore, settings: Settings) -> tuple[str, list[str]]:
    report, work = begin_scan(
        IndexRequest(job_id="n3", root=str(root)), store, settings.indexing, settings.data_dir
    )
    return " ".join(r.reason or "" for r in report.failures), [task.path for task in work]


# N3 ------------------------------------------------------------------------------------------------


def test_a_root_renamed_and_replaced_by_a_link_is_refused_with_its_reason(
    pinned: Settings, team: Path, shared_place: Path, store: LanceDBStore
) -> None:
    assert scan(team, store, pinned)[1] == [str(team / "notes.md")]
    attack = nobody_shell(
        'cd "$1" && mv team team.old && ln -s "$2" team', str(team.parent), str(shared_place / "secret")
    )
    assert attack.returncode == 0, attack.stderr

    failure, work = scan(team, store, pinned)
    assert work == [], "the scan must not read the folder the link leads to"
    assert "is now a symbolic link" in failure and f"hindsight index --re-register {team}" in failure
    assert allowed_roots(pinned.indexing, pinned.roots_file) == []
    assert RootWatcher(lambda: [team], print, debounce_ms=100).current_roots() == []


def test_the_watcher_service_drops_a_replaced_root_and_keeps_folders_inside_sound_ones(
    pinned: Settings, team: Path, shared_place: Path, tmp_path: Path, redis_url: str
) -> None:
    sound = tmp_path / "sound"
    (sound / "sub").mkdir(parents=True)
    register_root(pinned.roots_file, sound)
    registry = WatchRegistry(redis.Redis.from_url(redis_url))
    for folder in (team, sound / "sub"):
        registry.add(folder)  # as POST /v1/watch does
    assert sorted(watched_roots(registry, pinned.indexing, pinned.roots_file)) == sorted(
        [sound / "sub", team]
    )
    secret = str(shared_place / "secret")
    attack = nobody_shell('cd "$1" && mv team team.old && ln -s "$2" team', str(team.parent), secret)
    assert attack.returncode == 0, attack.stderr
    assert watched_roots(registry, pinned.indexing, pinned.roots_file) == [sound / "sub"]


def test_a_root_replaced_by_another_folder_is_refused_until_registered_again(
    pinned: Settings, team: Path, store: LanceDBStore
) -> None:
    attack = nobody_shell(
        'cd "$1" && mv team team.old && mkdir team && echo "# Planted" > team/planted.md', str(team.parent)
    )
    assert attack.returncode == 0, attack.stderr
    failure, work = scan(team, store, pinned)
    assert work == [] and "another folder than the one registered" in failure

    register_root(pinned.roots_file, team, again=True)  # the user, having looked, registers the folder again
    assert scan(team, store, pinned) == ("", [str(team / "planted.md")])


def test_hindsight_index_refuses_a_replaced_root_until_told_to_register_it_again(
    pinned: Settings, team: Path
) -> None:
    attack = nobody_shell('cd "$1" && mv team team.old && mkdir team', str(team.parent))
    assert attack.returncode == 0, attack.stderr
    env = {**os.environ, "PYTHONPATH": str(REPO), "HINDSIGHT_DATA_DIR": str(pinned.data_dir)}
    env["HINDSIGHT_GATEWAY_URL"] = "http://127.0.0.1:9"  # nothing listens: registration comes first

    def index(*flags: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "cli.main", "index", *flags, str(team)]
        return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)

    refused = index()
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    said = " ".join(refused.stdout.split())
    assert f"not indexed: {team} is another folder than the one registered" in said
    assert f"`hindsight index --re-register {team}` registers it again" in said
    assert allowed_roots(pinned.indexing, pinned.roots_file) == []

    index("--re-register")  # registers, then finds no gateway
    assert allowed_roots(pinned.indexing, pinned.roots_file) == [team]


# N5 ------------------------------------------------------------------------------------------------


def test_a_subfolder_replaced_by_a_link_is_not_followed_and_its_documents_stay(
    shared_place: Path, tmp_path: Path, store: LanceDBStore, embedder: OnnxEmbedder
) -> None:
    library = shared_place / "shared"
    (library / "a").mkdir()
    (library / "a" / "n.md").write_text("# N\n\nRye needs a longer proof than wheat.\n")
    shutil.chown(library / "a", "nobody")
    settings = Settings(data_dir=tmp_path / "data", models_dir=require_embedder(), roots=[library])
    assert (
        sync_root(
            IndexRequest(job_id="n5", root=str(library)),
            store,
            embedder,
            settings.indexing,
            settings.data_dir,
        ).new
        == 1
    )

    attack = nobody_shell('cd "$1" && mv a .a-old && ln -s /etc a', str(library))
    assert attack.returncode == 0, attack.stderr
    report, work = begin_scan(
        IndexRequest(job_id="n5b", root=str(library)), store, settings.indexing, settings.data_dir
    )
    assert (report.deleted, work) == (0, [])
    assert [(r.path, r.reason) for r in report.skipped_files] == [
        (str(library / "a"), "symlinked folder not followed (it could loop or leave the root)")
    ]
    assert str(library / "a" / "n.md") in store.manifest(str(library)), "a/n.md must stay indexed"


SWAPPER = textwrap.dedent(
    """
    import os, sys
    os.chdir(sys.argv[1])
    while True:
        os.rename("a", "a.real"); os.rename("a.link", "a"); os.rename("a", "a.link"); os.rename("a.real", "a")
    """
)


def test_a_walk_never_enters_a_subfolder_swapped_for_a_link_while_it_runs(shared_place: Path) -> None:
    library, outside = shared_place / "shared", shared_place / "outside"
    outside.mkdir()
    for i in range(50):
        (outside / f"outside-{i}.md").write_text("# Outside\n\nnot the user's\n")
    (library / "a").mkdir()
    (library / "a" / "n.md").write_text("# N\n\nkept\n")
    (library / "a.link").symlink_to(outside)
    for path in (library / "a", library / "a" / "n.md"):
        shutil.chown(path, "nobody")
    os.lchown(library / "a.link", *[int(x) for x in nobody_shell("id -u; id -g").stdout.split()])
    script = shared_place / "swap.py"
    script.write_text(SWAPPER)
    swapper = subprocess.Popen([*NOBODY, system_python(), str(script), str(library)])
    try:
        time.sleep(0.2)
        walks = failed = 0
        while walks < 300:
            walks += 1
            try:
                found = discover(library, [library], 200_000)
            except (
                UnlistableFolderError
            ):  # the folder vanished between listing and opening: fails, lists nothing
                failed += 1
                continue
            listed = [str(p) for p in found.files] + [r.path for r in found.skipped]
            assert not any("outside-" in path for path in listed), listed
        assert failed < walks
    finally:
        swapper.terminate()  # runuser passes SIGTERM on to the swapper; SIGKILL would orphan it
        swapper.wait(10)


# N4 ------------------------------------------------------------------------------------------------


def inotify_watches() -> int:
    """Inotify watches this process holds (one ``inotify wd:`` line per watch in its fds' fdinfo)."""
    count = 0
    for info in Path("/proc/self/fdinfo").iterdir():
        try:
            count += sum(line.startswith("inotify wd:") for line in info.read_text().splitlines())
        except OSError:
            continue
    return count


@pytest.fixture
def watching() -> Iterator[list[RootWatcher]]:
    started: list[RootWatcher] = []
    yield started
    for watcher in started:
        watcher.stop_event.set()


def watch(watchers: list[RootWatcher], root: Path, max_folders: int = 10_000) -> list[Path]:
    changed: list[Path] = []
    watcher = RootWatcher(
        lambda: [root], changed.append, debounce_ms=200, refresh_ms=200, max_folders=max_folders
    )
    watchers.append(watcher)
    threading.Thread(target=watcher.run, daemon=True).start()
    wait_for(lambda: inotify_watches() > 0, 10, "the watcher")
    return changed


def test_a_link_to_usr_dropped_in_a_watched_folder_takes_no_watch(
    shared_place: Path, watching: list[RootWatcher]
) -> None:
    """The link is there when the watcher starts (the stack restarts), and another to ``/`` comes
    while it runs; only the two real folders are watched, and a new real folder once it appears."""
    library = shared_place / "shared"
    (library / "sub").mkdir()
    assert nobody_shell('ln -s /usr "$1/usr"', str(library)).returncode == 0
    changed = watch(watching, library)
    time.sleep(0.5)
    assert inotify_watches() == 2, "a symlinked folder must not be watched"

    assert nobody_shell('ln -s / "$1/root"', str(library)).returncode == 0
    wait_for(lambda: changed == [library], 10, "the re-sync after the link appeared")
    time.sleep(0.5)
    assert inotify_watches() == 2

    (library / "sub" / "new").mkdir()  # a real new folder is watched once the burst settles
    wait_for(lambda: inotify_watches() == 3, 10, "the new folder's watch")


def test_the_watcher_caps_its_watches(tmp_path: Path, watching: list[RootWatcher]) -> None:
    deep = tmp_path / "deep"
    (deep / "/".join(f"level{i}" for i in range(30))).mkdir(parents=True)
    watch(watching, deep, max_folders=10)
    time.sleep(0.5)
    assert inotify_watches() == 10
