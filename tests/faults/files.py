"""Generated files for the fault tests: good notes, and bad files of every kind the indexer refuses."""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Callable
from pathlib import Path

from tests.indexer.documents import write_pdf

TOPICS = [
    ("sourdough", "The starter is fed with equal weights of rye flour and water every twelve hours."),
    ("espresso", "Eighteen grams of coffee in and thirty six grams out take about twenty eight seconds."),
    ("tcp", "TCP numbers every byte and retransmits segments whose acknowledgement never arrives."),
    ("rail", "The Swiss travel pass covers the train from Zurich to Lugano but not the trip to Milan."),
    ("garden", "Tomatoes go out after the last frost, deep enough that the stem grows new roots."),
    ("rust", "Rust moves ownership on assignment, so a value has exactly one owner at a time."),
    ("vectors", "A cross-encoder reads the question and the passage together and scores the pair."),
    ("climbing", "A figure eight follow-through knot is dressed and checked by the partner before a climb."),
]


def note(index: int, sentences: int) -> str:
    """A Markdown note of ``sentences`` sentences on one topic, distinct per ``index``."""
    topic, fact = TOPICS[index % len(TOPICS)]
    rng = random.Random(index)
    body = " ".join(f"{fact} Observation {index}.{n} noted a {rng.choice(['small', 'clear', 'odd'])} detail."
                    for n in range(sentences))  # fmt: skip
    return f"# Note {index} on {topic}\n\n{body}\n"


def write_notes(folder: Path, count: int, subfolders: int = 1) -> dict[str, int]:
    """``count`` short notes of one chunk each, spread over ``subfolders``; returns path -> chunks."""
    written = {}
    for index in range(count):
        sub = folder / f"batch-{index % subfolders}"
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"note-{index:04d}.md"
        path.write_text(note(index, sentences=2))
        written[str(path.resolve())] = 1
    return written


BadWriter = Callable[[Path, int], Path]


def binary_md(folder: Path, n: int) -> Path:
    path = folder / f"binary-{n}.md"
    path.write_bytes(b"# looks like text\x00\x01\x02" + os.urandom(64))
    return path


def corrupt_pdf(folder: Path, n: int) -> Path:
    path = folder / f"corrupt-{n}.pdf"
    path.write_bytes(b"%PDF-1.4\n" + random.Random(n).randbytes(300))
    return path


def empty(folder: Path, n: int) -> Path:
    path = folder / f"empty-{n}.md"
    path.write_bytes(b"")
    return path


def whitespace_only(folder: Path, n: int) -> Path:
    path = folder / f"blank-{n}.txt"
    path.write_text(" \n\t\n" * (n % 5 + 1))
    return path


def front_matter_only(folder: Path, n: int) -> Path:
    path = folder / f"front-matter-{n}.md"
    path.write_text(f"---\ntitle: Nothing below {n}\n---\n")
    return path


def broken_html(folder: Path, n: int) -> Path:
    path = folder / f"broken-{n}.html"
    path.write_text(f"<html><head><script>var x = {n};</script><body><div><span><table><tr><td>")
    return path


def unsupported(folder: Path, n: int) -> Path:
    path = folder / f"slides-{n}.{['docx', 'exe', 'png', 'zip'][n % 4]}"
    path.write_bytes(b"PK\x03\x04" + bytes(16))
    return path


def dangling_symlink(folder: Path, n: int) -> Path:
    path = folder / f"dangling-{n}.md"
    path.symlink_to(folder / f"missing-{n}.md")
    return path


def symlink_loop(folder: Path, n: int) -> Path:
    path = folder / f"loop-{n}.md"
    path.symlink_to(path)
    return path


def too_big(limit: int) -> BadWriter:
    def write(folder: Path, n: int) -> Path:
        path = folder / f"huge-{n}.txt"
        path.write_text("all work and no play " * (limit // 20 + 1))
        return path

    return write


def copies_of(template: bytes, stem: str, suffix: str) -> BadWriter:
    def write(folder: Path, n: int) -> Path:
        path = folder / f"{stem}-{n}{suffix}"
        path.write_bytes(template)
        return path

    return write


def unreadable(folder: Path, n: int) -> Path:
    path = folder / f"locked-{n}.md"
    path.write_text("# Locked\n\nNobody may read this.\n")
    path.chmod(0)
    return path


def bad_writers(scratch: Path, max_file_bytes: int) -> list[BadWriter]:
    """One writer per kind of bad file; unreadable files only where permissions bind (not as root)."""
    scratch.mkdir(parents=True, exist_ok=True)
    encrypted = write_pdf(scratch / "encrypted.pdf", ["Secret page."], user_password="pw").read_bytes()
    textless = write_pdf(scratch / "textless.pdf", [""]).read_bytes()
    writers: list[BadWriter] = [
        binary_md, corrupt_pdf, empty, whitespace_only, front_matter_only, broken_html,
        unsupported, dangling_symlink, symlink_loop, too_big(max_file_bytes),
        copies_of(encrypted, "encrypted", ".pdf"), copies_of(textless, "scanned", ".pdf"),
    ]  # fmt: skip
    if os.geteuid() != 0:
        writers.append(unreadable)
    return writers


def write_bad_files(folder: Path, count: int, writers: list[BadWriter]) -> list[str]:
    """``count`` bad files, the kinds taken in turn, spread over a few subfolders."""
    paths = []
    for n, writer in zip(range(count), itertools.cycle(writers), strict=False):
        sub = folder / f"batch-{n % 7}"
        sub.mkdir(parents=True, exist_ok=True)
        paths.append(str(writer(sub, n)))
    return paths
