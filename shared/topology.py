"""What runs where, and in which order: every Celery task, its queue, and the worker that serves it.

Services never import each other: they send tasks by the names below. Everything that routes, starts
or waits for a task derives from these tables: Celery's routing (``shared.celery_app``), the chain the
gateway starts for a question, the queues its backpressure counts and ``/healthz`` waits for, and the
workers ``hindsight up`` starts, and every worker's command line (``shared.worker``, which the local
stack, the images and the tests call). ``tests/shared/test_topology.py`` checks the Dockerfile's and
the compose file's worker commands against :data:`WORKERS`.

A question runs ``QUESTION_CHAIN`` in order; its last stage replaces itself by ``MAP_CHORD``: one map
task per batch of candidates, in parallel on the map queue, then one reduce that writes the answer.
The contracts each stage takes and gives are in the stage functions' signatures, which
``shared.question_stages`` lists in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal


class Queue(StrEnum):
    """The Celery queues; one kind of worker consumes each."""

    SCRAPE = "scrape"
    INDEX = "index"
    RETRIEVE = "retrieve"
    RERANK = "rerank"
    MAP = "map"
    REDUCE = "reduce"


# Task names: the only place they are spelled.
SCRAPE_RUN = "scrape.run"
SCRAPE_LIBRARY_CHECK = "scrape.library_check"
INDEX_SCAN = "index.scan"
INDEX_BATCH = "index.batch"
INDEX_REPORT = "index.report"
RETRIEVE_PLAN = "retrieve.plan"
RETRIEVE_SEARCH = "retrieve.search"
RETRIEVE_QUERY = "retrieve.query"
RERANK_SCORE = "rerank.score"
SYNTHESIZE_FAN_OUT = "synthesize.fan_out"
SYNTHESIZE_MAP = "synthesize.map"
SYNTHESIZE_REDUCE = "synthesize.reduce"

TASK_QUEUES: dict[str, Queue] = {
    SCRAPE_RUN: Queue.SCRAPE,  # export the Perplexity library, then queue index.scan if a file changed
    SCRAPE_LIBRARY_CHECK: Queue.SCRAPE,  # read the export folder back: origins, turns, unreadable files
    INDEX_SCAN: Queue.INDEX,  # diff a folder against the manifest; a chord of index.batch into index.report
    INDEX_BATCH: Queue.INDEX,  # load, chunk, embed and write a batch of files
    INDEX_REPORT: Queue.INDEX,  # sum the batches' results into the job's report
    RETRIEVE_PLAN: Queue.RETRIEVE,  # question -> plan (strategy, variations, keywords, HyDE)
    RETRIEVE_SEARCH: Queue.RETRIEVE,  # plan -> fused candidates (dense, HyDE, BM25, exact)
    RETRIEVE_QUERY: Queue.RETRIEVE,  # POST /v1/search: ranked passages, no answer
    RERANK_SCORE: Queue.RERANK,  # candidates -> those the cross-encoder keeps
    SYNTHESIZE_FAN_OUT: Queue.REDUCE,  # replaced by MAP_CHORD
    SYNTHESIZE_MAP: Queue.MAP,  # one batch of candidates -> facts with exact quotes
    SYNTHESIZE_REDUCE: Queue.REDUCE,  # every batch's facts -> the cited answer
}

# The chain a question runs, in order; each stage's result is the next one's argument.
QUESTION_CHAIN: tuple[str, ...] = (RETRIEVE_PLAN, RETRIEVE_SEARCH, RERANK_SCORE, SYNTHESIZE_FAN_OUT)


@dataclass(frozen=True)
class Chord:
    """Tasks of ``header`` run in parallel; ``body`` runs once with all their results."""

    header: str
    body: str


MAP_CHORD = Chord(header=SYNTHESIZE_MAP, body=SYNTHESIZE_REDUCE)


@dataclass(frozen=True)
class Worker:
    """A kind of worker process: ``celery -A <module> worker -Q <queues> -n <name>@%h --pool <pool>
    --concurrency <concurrency>`` (``shared.worker`` builds it).

    ``concurrency`` is how many tasks one container runs at once; ``local_concurrency`` how many it
    runs in ``hindsight up``'s stack, where every worker shares one machine. ``always_on`` workers are
    the ones ``hindsight up`` starts. ``required`` ones are what answering questions and indexing
    need: ``/healthz`` is ``ok`` only when each of their queues has a live worker. The scraper is
    started but not required: a stack without it still answers, and ``POST /v1/scrape`` says so
    when no scrape worker is there.
    """

    name: str
    module: str
    queues: tuple[Queue, ...]
    pool: Literal["prefork", "threads"] = "prefork"
    concurrency: int = 1
    local_concurrency: int = 1
    always_on: bool = True
    required: bool = True


WORKERS: tuple[Worker, ...] = (
    Worker("scraper", "services.scraper.tasks", (Queue.SCRAPE,), required=False),
    Worker("indexer", "services.indexer.tasks", (Queue.INDEX,), concurrency=2),
    Worker("retriever", "services.retriever.tasks", (Queue.RETRIEVE,), concurrency=2),
    # Threads share one warm ONNX session whose micro-batcher merges concurrent questions' pairs.
    Worker(
        "reranker",
        "services.reranker.tasks",
        (Queue.RERANK,),
        pool="threads",
        concurrency=8,
        local_concurrency=4,
    ),
    # Two local mappers map two batches of a question side by side (splitting the cores' LLM threads).
    Worker("mapper", "services.synthesizer.tasks", (Queue.MAP,), local_concurrency=2),
    Worker("reducer", "services.synthesizer.tasks", (Queue.REDUCE,), concurrency=2),
)

QUEUES: tuple[Queue, ...] = tuple(Queue)
# The queues a user waits on: their workers prefetch one message and get a dead worker's message back
# within minutes (``shared.celery_app``); the gateway's backpressure for questions counts them.
QUESTION_QUEUES: tuple[Queue, ...] = tuple(
    q for q in Queue if q in {TASK_QUEUES[t] for t in (*QUESTION_CHAIN, MAP_CHORD.header, MAP_CHORD.body)}
)
INDEX_QUEUES: tuple[Queue, ...] = tuple(q for q in Queue if q in {TASK_QUEUES[INDEX_SCAN]})
# ``/healthz`` is ``ok`` when each of these has a live worker.
REQUIRED_QUEUES: tuple[Queue, ...] = tuple(q for w in WORKERS if w.required for q in w.queues)


def worker(name: str) -> Worker:
    """The worker called ``name`` in :data:`WORKERS`."""
    return next(w for w in WORKERS if w.name == name)


def task_routes() -> dict[str, dict[str, str]]:
    """Celery's ``task_routes``: each task name to its queue."""
    return {task: {"queue": queue.value} for task, queue in TASK_QUEUES.items()}
