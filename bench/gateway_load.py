"""Fire N questions at a running stack at once; print wall time, latency percentiles, peak queue depth.

Usage (against ``hindsight up`` with the samples indexed):
    PYTHONPATH=. python bench/gateway_load.py --questions 24
Run it before and after adding workers (``--scale retriever=2`` in compose, or a second
``python -m shared.worker retriever -n retriever-2@%h`` locally) to see what scaling buys.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import redis

from cli.client import GatewayClient
from cli.local_key import client_key
from cli.local_stack import stack_redis_url
from shared.settings import get_settings
from shared.topology import QUEUES

QUESTIONS = (
    "How does cross-encoder reranking score passages?",
    "Which vector database suits a local-first app?",
    "What is my sourdough starter called?",
    "Where are we going in the autumn trip?",
)


def sample_depths(url: str, stop: threading.Event, peaks: dict[str, int]) -> None:
    client = redis.Redis.from_url(url)
    while not stop.is_set():
        for queue in QUEUES:
            peaks[queue] = max(peaks.get(queue, 0), int(client.llen(queue)))
        time.sleep(0.05)


def wait_for_answer(client: GatewayClient, question_id: str) -> None:
    for event in client.question_events(question_id):
        if event.stage == "answer":
            return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=24)
    args = parser.parse_args()
    settings = get_settings()
    key = client_key(settings)
    peaks: dict[str, int] = {}
    stop = threading.Event()
    redis_url = stack_redis_url(settings)  # the stack's own Redis is on its run folder's socket
    sampler = threading.Thread(target=sample_depths, args=(redis_url, stop, peaks), daemon=True)
    sampler.start()
    latencies: list[float] = []

    def one(text: str) -> None:
        client = GatewayClient(settings.gateway.gateway_url, key)
        started = time.perf_counter()
        wait_for_answer(client, client.ask(text))
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    threads = [
        threading.Thread(target=one, args=(QUESTIONS[n % len(QUESTIONS)],)) for n in range(args.questions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    stop.set()
    ordered = sorted(latencies)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    print(f"{args.questions} questions in {wall:.1f}s ({args.questions / wall:.2f} questions/s)")
    print(f"latency p50 {statistics.median(ordered):.2f}s p95 {p95:.2f}s max {ordered[-1]:.2f}s")
    print("peak queue depth: " + ", ".join(f"{q} {d}" for q, d in peaks.items()))


if __name__ == "__main__":
    main()
