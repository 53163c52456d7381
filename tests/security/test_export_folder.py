"""The export folder is private wherever ``--export-dir`` puts it: exported threads are the user's
research (the red team found it 0755 outside the data folder, listable and readable by every user)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.conftest import REPO, run_hindsight
from tests.security.outsider import as_nobody


def test_an_import_creates_its_export_folder_readable_by_the_user_alone(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # the export folder's parent is open to everyone, as a home folder may be
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / "How do I feed a starter.md").write_text(
        "# How do I feed a starter?\n\nDaily, flour and water.\n"
    )
    exports = tmp_path / "perplexity-exports"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        PYTHONPATH=str(REPO),
        HINDSIGHT_DATA_DIR=str(tmp_path / "data"),
        HINDSIGHT_GATEWAY_URL="http://127.0.0.1:9",
    )
    run_hindsight(env, "import", "perplexity-markdown", str(downloads), "--export-dir", str(exports))
    assert stat.S_IMODE(exports.stat().st_mode) == 0o700
    assert [p.suffix for p in exports.rglob("*.md")] == [".md"]
    if os.geteuid() == 0:
        assert as_nobody("ls", str(exports)).returncode != 0
