"""F2, F3, F6, F7, F8, F11: a planted or swapped file never leads the indexer or the evidence view to
another file, never blocks them, never floods them; scans delete only what they could see."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from services.gateway.evidence import evidence_for
from services.indexer.pipeline import begin_scan, index_batch, sync_root
from shared.contracts import Citation, IndexRequest, ScanReport, SearchFilters
from shared.embedding import OnnxEmbedder
from shared.index_jobs import PathOutsideRootsError, allowed_roots, confine_to_roots, register_root
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from tests.conftest import REPO
from tests.indexer.documents import write_pdf

QUOTE = "the starter doubles in four hours"


def cite(path: Path) -> Citation:
    return Citation(
        number=1, document_id="d", chunk_id="d:0", title="t", source_uri=str(path),
        char_start=0, char_end=len(QUOTE), quote=QUOTE,
    )  # fmt: skip


def sync(
    root: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings, force: bool = False
) -> ScanReport:
    return sync_root(
        IndexRequest(job_id="sec", root=str(root), force=force),
        store,
        embedder,
        settings.indexing,
        settings.data_dir,
    )


def reasons(report: ScanReport) -> dict[str, str]:
    return {Path(r.path).name: r.reason or "" for r in [*report.failures, *report.skipped_files]}


# F2 ------------------------------------------------------------------------------------------------


def test_evidence_of_a_cited_file_swapped_for_a_symlink_is_the_quote_alone(
    tmp_path: Path, library: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text(f"PRIVATE-KEY-MATERIAL {QUOTE} MORE-PRIVATE-TEXT")
    note = library / "note.md"
    note.write_text(f"Sourdough: {QUOTE} at room temperature.")
    assert evidence_for(cite(note), [library]).located

    note.unlink()
    note.symlink_to(secret)
    swapped = evidence_for(cite(note), [library])
    assert not swapped.located and "PRIVATE" not in swapped.before + swapped.after

    environ = library / "environ.txt"
    environ.symlink_to("/proc/self/environ")
    assert evidence_for(cite(environ), [library]).before == ""


def test_evidence_is_not_read_through_a_folder_swapped_for_a_symlink(tmp_path: Path, library: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "note.md").write_text(f"PRIVATE {QUOTE} PRIVATE")
    (library / "sub").symlink_to(outside)
    evidence = evidence_for(cite(library / "sub" / "note.md"), [library])
    assert not evidence.located and evidence.before == evidence.after == ""


def test_evidence_is_never_read_without_roots(library: Path) -> None:
    note = library / "note.md"
    note.write_text(f"Sourdough: {QUOTE}.")
    assert not evidence_for(cite(note), []).located


# F3 ------------------------------------------------------------------------------------------------


def test_with_no_roots_nothing_is_inside_and_system_folders_never_are(tmp_path: Path) -> None:
    with pytest.raises(PathOutsideRootsError, match="none are set"):
        confine_to_roots(tmp_path, [])
    for path in ("/", "/proc/self", "/sys/kernel", "/dev/shm", "/proc/1/environ"):
        with pytest.raises(PathOutsideRootsError, match="system folder"):
            confine_to_roots(Path(path), [Path("/")])


def test_indexing_a_folder_makes_it_a_root_in_a_private_file_and_system_folders_are_refused(
    tmp_path: Path, library: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "data", roots=[Path("/"), Path("/proc")])
    assert allowed_roots(settings.indexing, settings.roots_file) == []
    assert register_root(settings.roots_file, library) == library.resolve()
    register_root(settings.roots_file, library)
    assert allowed_roots(settings.indexing, settings.roots_file) == [library.resolve()]
    assert stat.S_IMODE(settings.roots_file.stat().st_mode) == 0o600
    for system in ("/", "/proc", "/sys", "/dev"):
        with pytest.raises(PathOutsideRootsError):
            register_root(settings.roots_file, Path(system))


def test_a_scan_of_a_system_folder_is_refused_whatever_the_roots(
    store: LanceDBStore, settings: Settings
) -> None:
    everything = settings.replace(roots=[Path("/")])
    for folder in ("/proc/self", "/etc", "/"):
        report, work = begin_scan(
            IndexRequest(job_id="sec", root=folder), store, everything.indexing, everything.data_dir
        )
        assert report.failed == 1 and not work and report.skipped_files == []


# F6 ------------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_fifo_or_symlink_swapped_in_after_discovery_is_skipped_not_waited_on_or_followed(
    tmp_path: Path, library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("PRIVATE text outside the roots")
    for name in ("fifo.md", "link.md"):
        (library / name).write_text("# Note\n\nA harmless note about bread.\n")
    _, work = begin_scan(
        IndexRequest(job_id="sec", root=str(library)), store, settings.indexing, settings.data_dir
    )
    assert len(work) == 2

    os.unlink(library / "fifo.md")
    os.mkfifo(library / "fifo.md")
    os.unlink(library / "link.md")
    (library / "link.md").symlink_to(secret)
    results = {
        Path(r.path).name: r for r in index_batch(work, store, embedder, settings.indexing, settings.data_dir)
    }
    assert results["fifo.md"].status == "skipped" and "not a regular file" in (
        results["fifo.md"].reason or ""
    )
    assert results["link.md"].status == "skipped" and "symlink" in (results["link.md"].reason or "")
    assert store.count_chunks() == 0

    report = sync(library, store, embedder, settings)
    assert "not a regular file" in reasons(report)["fifo.md"]
    assert "outside the configured roots" in reasons(report)["link.md"]


# F7 ------------------------------------------------------------------------------------------------


def test_a_pdf_that_extracts_to_more_text_than_the_cap_is_skipped_with_the_reason(
    library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    write_pdf(library / "bomb.pdf", ["many words of text " * 60] * 4)
    (library / "small.md").write_text("# Small\n\nA short note.\n")
    capped = settings.replace(max_document_chars=2_000)
    report = sync(library, store, embedder, capped)
    assert "HINDSIGHT_MAX_DOCUMENT_CHARS" in reasons(report)["bomb.pdf"]
    assert [Path(uri).name for uri in store.manifest(str(library))] == ["small.md"]


def test_a_document_over_the_chunk_cap_is_skipped_with_the_reason(
    library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (library / "long.md").write_text(
        "# Long\n\n" + "\n\n".join(f"Paragraph {i} about bread." for i in range(80))
    )
    report = sync(library, store, embedder, settings.replace(max_document_chunks=2))
    assert "HINDSIGHT_MAX_DOCUMENT_CHUNKS" in reasons(report)["long.md"]
    assert store.count_chunks() == 0


# F8 ------------------------------------------------------------------------------------------------


def test_a_scan_keeps_documents_under_hidden_folders_and_other_roots_inside_it(
    library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    notes = library / ".notes"
    notes.mkdir()
    (notes / "kept.md").write_text("# Kept\n\nA note in a hidden folder, indexed on its own.\n")
    (library / "projects").mkdir()
    (library / "projects" / "plan.md").write_text("# Plan\n\nA project plan.\n")
    both = settings.replace(roots=[library, notes, library / "projects"])
    assert sync(notes, store, embedder, both).new == 1
    assert sync(library / "projects", store, embedder, both).new == 1
    (library / "top.md").write_text("# Top\n\nA note at the top.\n")
    report = sync(library, store, embedder, both)
    assert report.deleted == 0 and report.deleted_files == []
    assert {Path(uri).name for uri in store.manifest(str(library))} == {"kept.md", "plan.md", "top.md"}


def test_a_scan_that_would_delete_most_of_a_root_needs_force_and_lists_what_it_deleted(
    library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    for name in ("a", "b", "c"):
        (library / f"{name}.md").write_text(f"# {name}\n\nNote {name} about bread.\n")
    sync(library, store, embedder, settings)
    (library / "a.md").unlink()
    (library / "b.md").unlink()

    refused = sync(library, store, embedder, settings)
    assert refused.failed == 1 and "--force" in (refused.failures[0].reason or "")
    assert len(store.manifest(str(library))) == 3

    forced = sync(library, store, embedder, settings, force=True)
    assert forced.deleted == 2
    assert sorted(Path(p).name for p in forced.deleted_files) == ["a.md", "b.md"]
    assert [Path(uri).name for uri in store.manifest(str(library))] == ["c.md"]


def test_an_unlistable_subfolder_fails_the_scan_instead_of_deleting_its_documents(
    library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    """The scan runs without root's capabilities (``setpriv``), so a mode-000 folder cannot be listed."""
    if os.geteuid() != 0:
        pytest.skip("dropping capabilities with setpriv needs root")
    locked = library / "locked"
    locked.mkdir()
    (locked / "inside.md").write_text("# Inside\n\nA note in a folder that becomes unreadable.\n")
    (library / "top.md").write_text("# Top\n\nA note at the top.\n")
    sync(library, store, embedder, settings)
    locked.chmod(0)
    scan = "\n".join(
        [
            "import sys",
            "from services.indexer.pipeline import begin_scan",
            "from shared.contracts import IndexRequest",
            "from shared.settings import Settings",
            "from shared.stores.lancedb_store import LanceDBStore",
            "s = Settings.model_validate_json(sys.argv[1])",
            f"store = LanceDBStore(s.store_dir, {embedder.dimension})",
            "request = IndexRequest(job_id='sec', root=sys.argv[2])",
            "report, _ = begin_scan(request, store, s.indexing, s.data_dir)",
            "print(report.model_dump_json())",
        ]
    )
    command = [sys.executable, "-c", scan, settings.model_dump_json(), str(library)]
    try:
        done = subprocess.run(
            ["setpriv", "--bounding-set", "-all", "--", *command],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        locked.chmod(0o755)
    assert done.returncode == 0, done.stderr
    report = ScanReport.model_validate(json.loads(done.stdout.splitlines()[-1]))
    assert report.failed == 1 and "cannot list" in (report.failures[0].reason or "")
    assert len(store.manifest(str(library))) == 2


# F11 -----------------------------------------------------------------------------------------------


def test_a_folder_tree_1200_levels_deep_fails_nothing_and_its_shallow_files_are_indexed(
    library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (library / "good.md").write_text("# Good\n\nA note at the top of a very deep tree.\n")
    deepest = library
    for _ in range(1200):  # one level at a time: Path.mkdir(parents=True) itself recurses
        deepest = deepest / "d"
        deepest.mkdir()
    (deepest / "deep.md").write_text("# Deep\n\nToo deep to walk.\n")
    try:
        report = sync(library, store, embedder, settings)
        assert report.failed == 0 and report.new == 1
        assert any("levels deep" in (r.reason or "") for r in report.skipped_files)
        assert [Path(uri).name for uri in store.manifest(str(library))] == ["good.md"]
    finally:
        (deepest / "deep.md").unlink()
        folder = deepest
        while folder != library:
            folder.rmdir()
            folder = folder.parent


# F10 -----------------------------------------------------------------------------------------------


def test_a_date_filter_before_year_1000_searches_instead_of_failing(
    library: Path, store: LanceDBStore, embedder: OnnxEmbedder, settings: Settings
) -> None:
    (library / "note.md").write_text("---\ncreated: 2024-05-01\n---\n# Bread\n\nA note about bread.\n")
    sync(library, store, embedder, settings)
    since = SearchFilters(date_from=datetime(999, 1, 1), date_to=datetime(9999, 12, 31, tzinfo=UTC))
    hits = store.dense_search(embedder.embed_query("bread"), 5, since)
    assert [hit.chunk.title for hit in hits] == ["Bread"]
    assert store.keyword_search("bread", 5, SearchFilters(date_to=datetime(999, 1, 1))) == []
