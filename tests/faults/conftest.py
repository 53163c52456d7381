"""What the fault tests share: the question stack's workers (two rerankers, two slow mappers), a
question's events and answer, a tmpfs to fill, the compose Redis's persistence, an index job's
progress, and the check that the store's manifest and chunks agree."""

from __future__ import annotations

import errno
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from cli.local_stack import ProcessSpec, celery_worker
from shared.contracts import Chunk, IndexProgress
from shared.events import events_key
from shared.stores.lancedb_store import LanceDBStore
from shared.topology import worker
from tests.conftest import REPO
from tests.faults.stack import FaultStack


def assert_manifest_agrees(store: LanceDBStore, max_chunks: int) -> dict[str, list[Chunk]]:
    """Each manifest row's chunks have ordinals 0..n-1, n being the row's count unless the row is
    pending, and every chunk of the store belongs to a row; returns the chunks by source uri."""
    held = {
        uri: store.document_chunks(entry.document_id, list(range(max_chunks + 1)))
        for uri, entry in store.manifest().items()
    }
    for uri, entry in store.manifest().items():
        assert [c.ordinal for c in held[uri]] == list(range(len(held[uri]))), uri
        assert not entry.content_hash or len(held[uri]) == entry.chunk_count, uri
    assert store.count_chunks() == sum(map(len, held.values())), "chunks that no manifest row claims"
    return held


RERANKERS = ("reranker-a", "reranker-b")
MAPPERS = ("mapper-a", "mapper-b")


def worker_specs(standin_dir: Path) -> list[ProcessSpec]:
    """Every worker a question needs, two of the reranker (the stand-in at ``standin_dir``) and two
    slow mappers, each its own process so that a test can kill one."""
    reranker_env = {
        "HINDSIGHT_RERANKER_MODEL_DIR": str(standin_dir),
        "HINDSIGHT_RERANKER_PRECISION": "fp32",
    }
    mapper_env = {"HINDSIGHT_LLM": "custom", "HINDSIGHT_LLM_FACTORY": "tests.faults.slow_llm:slow_mapper"}
    rerankers = [celery_worker(worker("reranker"), 2, name) for name in RERANKERS]
    mappers = [celery_worker(worker("mapper"), 2, name) for name in MAPPERS]
    return [
        celery_worker(worker("indexer")),
        celery_worker(worker("retriever")),
        *(ProcessSpec(s.name, s.argv, reranker_env) for s in rerankers),
        *(ProcessSpec(s.name, s.argv, mapper_env) for s in mappers),
        celery_worker(worker("reducer")),
    ]


def long_note(index: int) -> str:
    """Several paragraphs, so chunks are long and scoring 30 of them takes the reranker seconds."""
    paragraph = (
        "Delivery over TCP is guaranteed by sequence numbers, acknowledgements and retransmission timers; "
        "a sender keeps every unacknowledged segment and sends it again when the timer expires. "
    )
    return f"# Transport notes {index}\n\n" + "\n\n".join(paragraph * 3 for _ in range(4)) + "\n"


def question_events(client: redis.Redis, question_id: str) -> list[dict[str, Any]]:
    return [json.loads(fields[b"event"]) for _, fields in client.xrange(events_key(question_id))]


def answered(stack: FaultStack, question_id: str) -> dict[str, Any] | None:
    body = stack.get(f"/v1/questions/{question_id}")
    assert body.get("status") != "failed", body
    return body if body.get("status") == "done" else None


@contextmanager
def mounted_tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (mode 0700) mounted at ``mountpoint`` for the block; skips where mounting is
    not allowed (not root)."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mountpoint)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=True)


def fill(disk: Path, leave_bytes: int) -> Path:
    """A file taking all the free space but ``leave_bytes``."""
    filler = disk / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    filler.write_bytes(b"\0" * max(0, filler.stat().st_size - leave_bytes))
    return filler


def compose_redis_persistence() -> tuple[str, ...]:
    """The flags production Redis runs with, read from the compose file so the two cannot drift."""
    command = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["redis"]["command"]
    flags = command[command.index("redis-server") + 1 :]  # after the password file's shell wrapper
    assert flags[flags.index("--appendonly") + 1] == "yes"
    return tuple(flags)


def progress_of(stack: FaultStack, job_id: str) -> IndexProgress | None:
    """The running job's progress as ``GET /v1/index/{job}`` shows it (none once the report is in)."""
    body = stack.get(f"/v1/index/{job_id}")
    return IndexProgress.model_validate(body["progress"]) if body.get("progress") else None
