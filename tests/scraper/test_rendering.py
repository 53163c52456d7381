"""Markdown, file names, the content hash and the checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from services.scraper.checkpoint import CHECKPOINT_NAME, CheckpointStore, content_hash
from services.scraper.filenames import thread_relpath
from services.scraper.markdown import render_thread
from services.scraper.models import Source, Thread, Turn
from services.scraper.writer import ThreadWriter, WriteOutcome
from shared.file_names import safe_component


def _thread(**changes: object) -> Thread:
    base = Thread(
        uuid="u-1",
        title="T",
        slug="t-ABCDEFGHIJ",
        space="S",
        turns=[
            Turn(
                question="Why?\nReally?",
                answer="Because [1], not [3].",
                sources=[Source(name="A [x]", url="https://a")],
            )
        ],
    )
    return base.model_copy(update=changes)


def test_rendered_thread_has_yaml_front_matter_and_one_section_per_turn() -> None:
    text = render_thread(_thread())

    head, body = text.split("---\n")[1:3]
    meta = {k: json.loads(v) for k, v in (line.split(": ", 1) for line in head.splitlines())}
    assert meta == {"title": "T", "uuid": "u-1", "slug": "t-ABCDEFGHIJ", "space": "S", "source": "perplexity"}
    assert "## Why? Really?\n\n> Why?\n> Really?" in body
    assert "Because [1], not [3]." in body  # markers stay prose; the list below resolves them
    assert "1. [A \\[x\\]](https://a)" in body


def test_unsafe_titles_become_portable_names() -> None:
    assert safe_component('a/b\\c:d*e?f"g<h>i|j') == "a_b_c_d_e_f_g_h_i_j"
    assert safe_component(" trailing dots... ") == "trailing dots"
    assert safe_component("nul") == "_nul"
    assert safe_component("...") == "Untitled"
    long = safe_component("é" * 100)
    assert len(long.encode()) <= 80 and long == "é" * 40


def test_file_name_uses_the_slug_id_else_the_uuid() -> None:
    assert str(thread_relpath(_thread())) == "S/T (ABCDEFGHIJ).md"
    assert str(thread_relpath(_thread(slug=None))) == "S/T (u-1).md"


def test_hash_ignores_key_order_and_tracks_content() -> None:
    assert content_hash(_thread()) == content_hash(
        Thread.model_validate(dict(reversed(_thread().model_dump().items())))
    )
    assert content_hash(_thread()) != content_hash(_thread(title="T2"))
    assert len(content_hash(_thread())) == 64


def test_writer_skips_unchanged_moves_renamed_threads_and_keeps_names_unique(tmp_path: Path) -> None:
    writer = ThreadWriter(tmp_path)
    assert writer.write(_thread())[0] is WriteOutcome.NEW
    assert writer.write(_thread())[0] is WriteOutcome.UNCHANGED
    outcome, path = writer.write(_thread(title="Renamed"))
    assert outcome is WriteOutcome.CHANGED and not (tmp_path / "S/T (ABCDEFGHIJ).md").exists()
    clash = _thread(uuid="u-2", title="Renamed")
    assert writer.write(clash)[1] == "S/Renamed (u-2).md"
    writer.close()
    assert set(json.loads((tmp_path / CHECKPOINT_NAME).read_text())["threads"]) == {"u-1", "u-2"}
    (tmp_path / path).unlink()
    assert ThreadWriter(tmp_path).write(_thread(title="Renamed"))[0] is WriteOutcome.CHANGED


def test_files_rendered_in_an_older_format_are_rendered_again(tmp_path: Path) -> None:
    writer = ThreadWriter(tmp_path)
    relpath = writer.write(_thread(), "listing")[1]
    writer.close()
    assert ThreadWriter(tmp_path).is_current("u-1", "listing")
    checkpoint = json.loads((tmp_path / CHECKPOINT_NAME).read_text())
    checkpoint["threads"]["u-1"].pop("format")  # written before formats were recorded
    (tmp_path / CHECKPOINT_NAME).write_text(json.dumps(checkpoint))

    again = ThreadWriter(tmp_path)
    assert not again.is_current("u-1", "listing")
    assert again.write(_thread(), "listing") == (WriteOutcome.CHANGED, relpath)
    assert again.is_current("u-1", "listing")


def test_a_corrupt_checkpoint_is_set_aside_not_fatal(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINT_NAME).write_text("{torn")

    store = CheckpointStore(tmp_path)

    assert store.data.threads == {}
    assert (tmp_path / CHECKPOINT_NAME).with_suffix(".corrupt").read_text() == "{torn"
