"""A process that exports threads as the scraper does, for the crash test to SIGKILL mid-export.

``python -m tests.faults.export_writer EXPORT_DIR REVISION COUNT`` writes ``COUNT`` threads through
the scraper's :class:`~services.scraper.writer.ThreadWriter`, as an export run does once it has
fetched them. Each revision changes every thread's answer and every third thread's title (so its
file moves), and the checkpoint is saved after every file written, as in a real run. It prints
how many threads it has written after each one, so the test can kill it at a chosen point of the run
however fast the machine is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from services.scraper.models import Thread, Turn
from services.scraper.writer import ThreadWriter


def thread(number: int, revision: int) -> Thread:
    title = f"Thread {number}" + (f" take {revision}" if number % 3 == 0 else "")
    return Thread(
        uuid=f"00000000-0000-4000-8000-{number:012d}",
        title=title,
        space=f"Space {number % 4}",
        turns=[Turn(question=f"What is fact {number}?", answer=f"Fact {number}, revision {revision}.")],
    )


def export(export_dir: Path, revision: int, count: int, written: Callable[[int], None] | None = None) -> None:
    writer = ThreadWriter(export_dir)
    try:
        for number in range(count):
            writer.write(thread(number, revision), listing=f"r{revision}")
            if written is not None:
                written(number + 1)
    finally:
        writer.close()


if __name__ == "__main__":
    export(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), lambda n: print(n, flush=True))
