"""The Celery edge end to end: a real ``redis-server``, a real ``celery worker -Q index`` subprocess.

The files are indexed in batches, yet the job's event stream must carry per-file progress (done of
total, rate, ETA) and end with the report; a batch whose embedding keeps failing is retried with
backoff, then indexed file by file, and the file that fails alone is parked with its reason while
the rest of its batch and of the scan completes. That last test embeds through the Ollama embedder
against a local HTTP stand-in of Ollama's ``/api/embed`` (the Ollama server cannot run here).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import redis
from celery import Celery

from shared.contracts import Event, IndexRequest, ScanReport
from shared.events import EVENT_FIELD
from shared.index_jobs import read_progress
from shared.redis_keys import events_key, index_cancelled_key, index_report_key
from shared.stores.lancedb_store import LanceDBStore
from shared.topology import task_routes
from testing.processes import wait_for
from tests.indexer.conftest import start_index_worker, stop, worker_env
from tests.indexer.documents import write_pdf
from tests.shared.ollama_standin import OllamaStandIn

pytestmark = pytest.mark.integration


def send_scan(redis_url: str, root: Path, job_id: str | None = None) -> str:
    """Queue a scan of ``root`` as the gateway does; the job's id (``job_id``, or a new one)."""
    client = Celery("indexer-tests", broker=redis_url, backend=redis_url)
    client.conf.update(task_serializer="json", accept_content=["json"], task_routes=task_routes())
    job_id = job_id or uuid.uuid4().hex
    client.send_task("index.scan", args=[IndexRequest(job_id=job_id, root=str(root)).to_payload()])
    return job_id


def wait_for_report(client: redis.Redis, job_id: str, timeout_s: float = 90) -> ScanReport:
    raw = wait_for(lambda: client.get(index_report_key(job_id)), timeout_s, f"report of {job_id}", 0.2)
    return ScanReport.model_validate_json(raw)


def job_events(client: redis.Redis, job_id: str) -> list[Event]:
    return [Event.model_validate_json(f[EVENT_FIELD]) for _, f in client.xrange(events_key(job_id))]


def test_scan_fans_out_reports_progress_and_resyncs_incrementally(
    tmp_path: Path, docs: Path, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    for i in range(4):
        (docs / f"note-{i}.md").write_text(f"# Note {i}\n\nFermentation detail number {i}.\n")
    write_pdf(docs / "paper.pdf", ["Page one about rye.", "Page two about spelt."])
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 nonsense")
    data_dir = tmp_path / "worker-data"
    env = worker_env(redis_url, data_dir, [docs], HINDSIGHT_INDEX_BATCH_FILES="4")
    worker = start_index_worker(env, tmp_path / "worker.log")
    try:
        job_id = send_scan(redis_url, docs)
        report = wait_for_report(client, job_id)
        assert (report.scanned, report.new, report.failed) == (6, 6, 1)
        assert "corrupt PDF" in (report.failures[0].reason or "")
        events = job_events(client, job_id)
        documents = [e for e in events if e.stage == "document"]
        assert len(documents) == 6, "one event per file, though two batches (4 + 2) indexed them"
        assert [e.data["progress"]["done"] for e in documents] == [1, 2, 3, 4, 5, 6]
        last = documents[-1].data["progress"]
        assert (last["done"], last["total"]) == (6, 6) and last["rate_files_per_s"] > 0
        # the rates count from the first batch begun, so the first file done already gives an ETA;
        # a batch is counted whole before its events, which all carry the rate of the batch done
        assert len({e.data["progress"]["rate_bytes_per_s"] for e in documents[:4]}) == 1
        assert all(e.data["progress"]["eta_s"] is not None for e in documents)
        assert last["done_bytes"] == last["total_bytes"] > 0 and last["eta_s"] == 0
        assert events[-1].stage == "index" and events[-1].status == "done"
        progress = read_progress(job_id, client)
        assert progress is not None and progress.done == progress.total == 6

        (docs / "note-0.md").write_text("# Note 0\n\nRewritten entirely.\n")
        (docs / "note-1.md").unlink()
        again = wait_for_report(client, send_scan(redis_url, docs))
        assert (again.changed, again.deleted, again.unchanged, again.new) == (1, 1, 3, 0)
        # the corrupt PDF fails again without being read again (tests/security/test_pdf_bombs.py)
        assert [Path(r.path).name for r in again.failures] == ["broken.pdf"] and again.failed == 1
        assert "corrupt PDF" in (again.failures[0].reason or "")
    finally:
        stop(worker)
    store = LanceDBStore(data_dir / "store", 384)
    assert sorted(Path(u).name for u in store.manifest(str(docs))) == [
        "note-0.md", "note-2.md", "note-3.md", "paper.pdf",
    ]  # fmt: skip
    assert store.count_chunks() == sum(e.chunk_count for e in store.manifest().values())


def test_a_cancelled_job_stops_between_batches_and_ends_with_a_cancelled_report(
    tmp_path: Path, docs: Path, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    paragraph = "Sourdough starters ferment flour and water with wild yeast and lactic bacteria. " * 40
    for i in range(8):  # one file a batch, each a few seconds of embedding
        (docs / f"note-{i}.md").write_text(f"# Note {i}\n\n" + f"{paragraph}\n\n" * 20)
    data_dir = tmp_path / "worker-data"
    env = worker_env(redis_url, data_dir, [docs], HINDSIGHT_INDEX_BATCH_FILES="1")
    worker = start_index_worker(env, tmp_path / "worker.log")
    try:
        job_id = send_scan(redis_url, docs)
        wait_for(lambda: any(e.stage == "document" for e in job_events(client, job_id)), 120, "a file done")
        client.set(index_cancelled_key(job_id), "1", ex=600)  # what DELETE /v1/index/{job} sets
        report = wait_for_report(client, job_id)

        pre_cancelled = uuid.uuid4().hex
        client.set(index_cancelled_key(pre_cancelled), "1", ex=600)
        send_scan(redis_url, docs, pre_cancelled)
        never_begun = wait_for_report(client, pre_cancelled)
    finally:
        stop(worker)
    events = job_events(client, job_id)
    done = [e for e in events if e.stage == "document"]
    chunks = [e.data for e in events if e.stage == "progress" and e.data["current_chunks"]]
    assert chunks, "each file is several embedder calls: its chunks embedded are reported as they go"
    assert report.cancelled and report.new == 8 and 1 <= len(done) < 8, report
    last = events[-1]
    assert (last.stage, last.status) == ("index", "failed") and last.detail.startswith("cancelled: ")
    store = LanceDBStore(data_dir / "store", 384)
    assert len(store.manifest(str(docs))) == len(done), "the files indexed before the cancel stay indexed"
    assert never_begun.cancelled and never_begun.scanned == 0 and not job_events(client, pre_cancelled)[:-1]


def test_a_batch_that_keeps_failing_is_retried_with_backoff_then_only_the_culprit_is_parked(
    tmp_path: Path, docs: Path, redis_url: str
) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    (docs / "fine.md").write_text("# Fine\n\nThis one embeds.\n")
    (docs / "poison.md").write_text("# Poison\n\nThe stand-in fails on POISON every time.\n")
    with OllamaStandIn(dimension=32, poison_word="POISON") as standin:
        env = worker_env(
            redis_url,
            tmp_path / "worker-data",
            [docs],
            HINDSIGHT_EMBEDDER="ollama",
            HINDSIGHT_OLLAMA_URL=standin.url,
            HINDSIGHT_OLLAMA_EMBED_DIMENSION="32",
            HINDSIGHT_OLLAMA_RETRIES="0",
            HINDSIGHT_INDEX_MAX_RETRIES="2",
            HINDSIGHT_INDEX_RETRY_BACKOFF_S="0.2",
        )
        worker = start_index_worker(env, tmp_path / "worker.log")
        try:
            job_id = send_scan(redis_url, docs)
            report = wait_for_report(client, job_id)
        finally:
            stop(worker)
    assert report.new == 2 and report.failed == 1 and report.chunks >= 1
    parked = report.failures[0]
    assert Path(parked.path).name == "poison.md" and parked.attempts == 3
    assert (parked.reason or "").startswith("parked after 3 attempts: EmbedderError")
    poisoned = [r for r in standin.requests if "POISON" in json.dumps(r)]
    assert len(poisoned) == 3, "twice with its batch, once alone"
    events = job_events(client, job_id)
    retries = [e for e in events if e.stage == "document" and "retry" in e.detail]
    assert [sorted(Path(p).name for p in e.data["paths"]) for e in retries] == [["fine.md", "poison.md"]] * 2
    results = {Path(e.data["result"]["path"]).name: e.data["result"] for e in events if "result" in e.data}
    assert results["fine.md"]["status"] == "indexed" and results["fine.md"]["attempts"] == 3
    assert results["poison.md"]["status"] == "failed"
