"""An indexer cut off from Redis for a minute by a network partition, then reconnected.

The partition is a TCP proxy on loopback between the worker and Redis that the test pauses: its
connections stay open but no byte crosses in either direction, so the worker's reads hang as they
do behind a dead link (not refused, as when Redis is down). The gateway reaches Redis directly and
accepts an index job meanwhile. "Whole" means: nothing of that job is done while the worker is cut
off; once the link is back the same worker process (not a restarted one) runs it, and the store holds
exactly every file.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from cli.local_stack import ProcessSpec, celery_worker
from shared.topology import worker
from testing.processes import free_port
from tests.faults.files import write_notes
from tests.faults.stack import FaultStack, assert_store_holds_exactly, index_report

pytestmark = pytest.mark.integration

PARTITION_S = 60


class PausableProxy:
    """Forwards loopback TCP connections from its port to ``target``; ``pause`` stops every byte."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.port = target, free_port()
        self.flowing = threading.Event()
        self.flowing.set()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            threading.Thread(target=self.pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client), daemon=True).start()

    def pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                self.flowing.wait()
                data = source.recv(65536)
                if not data:
                    break
                self.flowing.wait()  # bytes read just before the pause wait for the link to come back
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                end.close()

    def pause(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self.resume()
        for sock in self.sockets:
            sock.close()


@pytest.fixture
def partition(redis_url: str) -> Iterator[tuple[PausableProxy, str]]:
    url = urlparse(redis_url)
    proxy = PausableProxy((url.hostname or "127.0.0.1", url.port or 6379))
    yield proxy, url._replace(netloc=url.netloc.replace(f":{url.port}", f":{proxy.port}")).geturl()
    proxy.close()


@pytest.fixture
def stack(redis_url: str, partition: tuple[PausableProxy, str], tmp_path: Path) -> Iterator[FaultStack]:
    library = (tmp_path / "library").resolve()
    library.mkdir()
    env = {"HINDSIGHT_ROOTS": str(library), "HINDSIGHT_ONNX_THREADS": "1"}
    stack = FaultStack(redis_url, tmp_path / "data", env)
    indexer = celery_worker(worker("indexer"), name="indexer")
    try:
        stack.start(ProcessSpec(indexer.name, indexer.argv, {"HINDSIGHT_REDIS_URL": partition[1]}))
        stack.start_gateway()
        stack.wait_until_served({"index": 1})
        yield stack
    finally:
        stack.down()


def test_an_indexer_cut_off_from_redis_for_a_minute_runs_the_job_queued_meanwhile_once_reconnected(
    stack: FaultStack, partition: tuple[PausableProxy, str]
) -> None:
    proxy, _ = partition
    root = Path(stack.env["HINDSIGHT_ROOTS"])
    before = write_notes(root / "before", 10)
    assert index_report(stack, stack.client.index(str(root / "before")), timeout_s=120).failed == 0
    workers = stack.processes()

    proxy.pause()
    during = write_notes(root / "during", 20)
    job_id = stack.client.index(str(root / "during"))
    time.sleep(PARTITION_S)
    done_while_cut_off = stack.store().manifest(str(root / "during"))
    report_while_cut_off = stack.client.index_report(job_id)
    proxy.resume()
    report = index_report(stack, job_id, timeout_s=180)

    assert (done_while_cut_off, report_while_cut_off) == ({}, None), "the worker was cut off"
    assert (report.new, report.failed) == (len(during), 0)
    assert_store_holds_exactly(stack, root / "before", before)
    assert_store_holds_exactly(stack, root / "during", during)
    assert stack.processes() == workers, "the same worker process, not a restarted one"
    print(f"cut off {PARTITION_S}s; then indexed {report.new} files in {report.elapsed_s:.1f}s of job time")
