"""N6, N11 (issue 34): crafted Perplexity export files never lead the importer to another file, never
flood it and never crash it; what is bad is reported by name and the rest is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from services.scraper.imports import threads_from_data_export, threads_from_markdown_dir, write_threads
from tests.conftest import REPO

BASE = "https://www.perplexity.ai"
MAX_BYTES = 100_000
GOOD = "# How do I feed a starter?\n\nDaily, with flour and water.[^1]\n\n[^1]: https://example.org/starter\n"


def conversation(title: str, created_at: object = "2025-05-01T08:00:00Z", answer: object = "Fine.") -> dict:
    return {
        "context_title": title,
        "created_at": created_at,
        "entries": [{"query": f"{title}?", "answer": answer, "created_at": "2025-05-01T08:00:00Z"}],
    }


def test_a_markdown_export_swapped_for_a_symlink_to_a_private_file_is_refused_not_followed(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "outside" / "id_rsa.md"
    secret.parent.mkdir()
    secret.write_text("# PRIVATE KEY\n\nPRIVATE-KEY-MATERIAL\n")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / "Starter.md").write_text(GOOD)
    (downloads / "Innocent.md").symlink_to(secret)

    imported = threads_from_markdown_dir(downloads, MAX_BYTES)
    report = write_threads(imported, tmp_path / "exports")

    assert [t.title for t in imported.threads] == ["Starter"]
    assert any("Innocent.md" in p and "symlink" in p for p in report.failures)
    assert all("PRIVATE" not in p.read_text() for p in (tmp_path / "exports").rglob("*.md"))


def test_an_oversized_markdown_export_is_refused_by_name_without_being_read(tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / "Starter.md").write_text(GOOD)
    (downloads / "Flood.md").write_text("# Flood?\n\n" + "x" * (MAX_BYTES + 1))

    imported = threads_from_markdown_dir(downloads, MAX_BYTES)

    assert [t.title for t in imported.threads] == ["Starter"]
    assert any("Flood.md" in p and "limit" in p for p in imported.problems)


def test_a_conversation_nested_200000_deep_is_reported_by_number_and_title_and_the_rest_imported(
    tmp_path: Path,
) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    text = (
        '{"conversations": ['
        + json.dumps(conversation("Tea"))
        + ', {"context_title": "Bomb", "entries": [{"query": "q", "answer": '
        + deep
        + "}]}, "
        + json.dumps(conversation("Coffee"))
        + "]}"
    )
    source = tmp_path / "export.json"
    source.write_text(text)

    imported = threads_from_data_export(source, BASE, 10 * MAX_BYTES)

    assert [t.title for t in imported.threads] == ["Tea", "Coffee"]
    (problem,) = imported.problems
    assert "conversation 2 ('Bomb')" in problem and "nested deeper" in problem


def test_created_at_of_1e20_nan_or_infinity_is_reported_per_thread_and_the_threads_imported(
    tmp_path: Path,
) -> None:
    source = tmp_path / "export.json"
    conversations = [
        conversation("Far future", 1e20),
        conversation("Not a number", float("nan")),
        conversation("Forever", float("inf")),
        conversation("Nested answer", answer={"a": [1, 2]}),
        conversation("Fine"),
    ]
    source.write_text(json.dumps({"conversations": conversations}))  # writes NaN and Infinity literals

    imported = threads_from_data_export(source, BASE, MAX_BYTES)

    assert [t.title for t in imported.threads] == ["Far future", "Not a number", "Forever", "Fine"]
    assert all(t.created is None for t in imported.threads[:3])
    named = " | ".join(imported.problems)
    for title in ("Far future", "Not a number", "Forever", "Nested answer"):
        assert title in named
    assert "Fine" not in named


def test_the_import_command_reports_a_crafted_export_without_a_traceback(tmp_path: Path) -> None:
    source = tmp_path / "export.json"
    source.write_text(json.dumps({"conversations": [conversation("Far future", 1e20), conversation("Fine")]}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HINDSIGHT_DATA_DIR": str(tmp_path / "data")}
    env["HINDSIGHT_GATEWAY_URL"] = "http://127.0.0.1:9"

    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "import", "perplexity-export", str(source)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    said = result.stdout + result.stderr
    assert "Traceback" not in said
    assert "2 threads" in said and "Far future" in said and "is not a date" in said
