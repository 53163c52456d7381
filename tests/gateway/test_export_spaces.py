"""The library's Perplexity spaces (what ``list_sources`` reports): threads per space folder of the
export folder, as the scraper writes them (``<space>/<title> (<id>).md``), links not followed."""

from __future__ import annotations

from pathlib import Path

from services.gateway.routes.library import export_spaces


def test_the_export_folder_counts_its_threads_per_space_and_other_folders_have_none(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    for space, titles in {"Baking": ["Proofing (7f1c)", "Rye (a1b2)"], "General": ["Trains (c3d4)"]}.items():
        (exports / space).mkdir(parents=True)
        for title in titles:
            (exports / space / f"{title}.md").write_text("# thread\n")
    (exports / "Baking" / "notes.txt").write_text("not a thread")
    (exports / "Baking" / "Linked (e5f6).md").symlink_to(exports / "General" / "Trains (c3d4).md")
    (exports / "Elsewhere").symlink_to(tmp_path)
    assert export_spaces(str(exports), exports) == {"Baking": 2, "General": 1}
    assert export_spaces(str(tmp_path), exports) == {}
