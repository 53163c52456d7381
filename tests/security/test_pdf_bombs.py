"""F7: a small PDF that expands to tens of millions of characters is refused while it is extracted
(bounded by time and by size), and a refused file is not read again until it changes.

The bomb is the red team's shape: one page whose content stream (Flate-compressed, so the file stays
small) shows the same string with ``Tj`` millions of times; pypdf's work on such a page grows with
the square of its text (6 M characters took 6.5 s, 24 M took 244 s, holding the only indexer)."""

from __future__ import annotations

import json
import sys
import time
import zlib
from pathlib import Path

import pytest

from services.indexer.loaders import SkippedFileError, load_pdf
from services.indexer.pipeline import begin_scan, sync_root
from shared.contracts import IndexRequest
from shared.embedding import OnnxEmbedder
from shared.pdf_reader import PdfReaderProcess
from shared.settings import Settings
from shared.stores.lancedb_store import LanceDBStore
from tests.conftest import require_embedder
from tests.indexer.documents import write_pdf

SHOWN = b"(The starter doubles in four hours, then it is ready) Tj "


def pdf_bomb(path: Path, characters: int) -> Path:
    """A one-page PDF whose compressed content stream shows about ``characters`` characters."""
    content = b"BT /F1 1 Tf " + SHOWN * (characters // (len(SHOWN) - 6)) + b"ET"
    packed = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
        b"/Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Filter /FlateDecode /Length %d >>\nstream\n%b\nendstream" % (len(packed), packed),
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%b\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_a_small_pdf_expanding_to_24_million_characters_is_refused_at_the_time_limit(tmp_path: Path) -> None:
    bomb = pdf_bomb(tmp_path / "bomb.pdf", 24_000_000)
    assert bomb.stat().st_size < 100_000
    started = time.monotonic()
    with pytest.raises(SkippedFileError, match=r"took over 1s \(HINDSIGHT_PDF_TIME_LIMIT_S\)"):
        load_pdf(bomb.read_bytes(), bomb, max_chars=50_000_000, time_limit_s=1.0)
    assert time.monotonic() - started < 5
    sound = write_pdf(tmp_path / "sound.pdf", ["The starter doubles in four hours."])
    assert "doubles" in load_pdf(sound.read_bytes(), sound, 5_000_000, 30.0).text  # a new reader


def test_a_refused_pdf_is_not_read_again_until_it_changes(
    tmp_path: Path, library: Path, store: LanceDBStore, embedder: OnnxEmbedder
) -> None:
    bomb = pdf_bomb(library / "bomb.pdf", 24_000_000)
    settings = Settings(
        data_dir=tmp_path / "data", models_dir=require_embedder(), roots=[library], pdf_time_limit_s=1.0
    )
    first = sync_root(
        IndexRequest(job_id="f7", root=str(library)), store, embedder, settings.indexing, settings.data_dir
    )
    assert "HINDSIGHT_PDF_TIME_LIMIT_S" in first.skipped_files[0].reason  # type: ignore[operator]

    started = time.monotonic()
    report, work = begin_scan(
        IndexRequest(job_id="f7b", root=str(library)), store, settings.indexing, settings.data_dir
    )
    assert work == [] and time.monotonic() - started < 1
    assert report.skipped_files[0].reason.endswith("not read again until the file changes")  # type: ignore[union-attr]

    write_pdf(bomb, ["The starter doubles in four hours."])  # the user replaces it with a sound file
    again = sync_root(
        IndexRequest(job_id="f7c", root=str(library)), store, embedder, settings.indexing, settings.data_dir
    )
    assert (again.new, again.skipped) == (1, 0), again.skipped_files


def test_the_time_limit_counts_the_extraction_not_the_readers_start(tmp_path: Path) -> None:
    """After a bomb the reader is killed and the next PDF starts a new one. On a busy machine (the
    security suite at load 12 on two cores) Python and pypdf took over the 1 s limit to start, and the
    sound PDF the user put in the bomb's place was refused for the reader's start. A reader that takes
    2 s to start still reads a sound PDF within 1 s."""
    sound = write_pdf(tmp_path / "sound.pdf", ["The starter doubles in four hours."])
    reader = PdfReaderProcess(("sh", "-c", 'sleep 2; exec "$0" -m shared.pdf_child', sys.executable))
    try:
        outcome = json.loads(reader.read(sound.read_bytes(), 5_000_000, time_limit_s=1.0))
    finally:
        reader.close()
    assert "doubles" in outcome["pages"][0]
