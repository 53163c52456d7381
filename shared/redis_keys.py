"""Every Redis key the services read or write, and how long each lives: the only place they are spelled.

A key with an id in it is a :class:`KeyFamily`, called with the ids (``events_key(question_id)``);
a fixed key is a string. Beside each is its :class:`Lifetime`: kept until deleted, or a number of
seconds after its last write, fixed or from a setting (most live as long as the events of the
question or job they belong to, ``event_ttl_s``). Celery's own keys (results, chords, queues) are
Celery's; the unacknowledged-message keys of question workers are kombu's, named here because
``shared.celery_app`` chooses them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared.settings import TaskSettings

PREFIX = "hindsight:"


@dataclass(frozen=True)
class Lifetime:
    """How long a key lives: ``of(settings)`` seconds after its last write, or until deleted when ``of``
    is ``None``."""

    of: Callable[[TaskSettings], float] | None = None

    def ttl_s(self, settings: TaskSettings) -> int:
        """Seconds to pass as the key's expiry (at least one); a key kept until deleted has none."""
        if self.of is None:
            raise ValueError("this key is kept until deleted: it has no expiry")
        return max(1, round(self.of(settings)))


UNTIL_DELETED = Lifetime()
AS_LONG_AS_EVENTS = Lifetime(lambda s: s.event_ttl_s)


@dataclass(frozen=True)
class KeyFamily:
    """One key per id (or tuple of ids): ``pattern`` with a ``{}`` for each, after :data:`PREFIX`."""

    pattern: str
    lifetime: Lifetime
    holds: str  # what the key holds, for the reader of this table

    def __call__(self, *ids: object) -> str:
        return PREFIX + self.pattern.format(*ids)


# A question's or job's events (shared.events), its final result, and which kind of stream an id is.
events_key = KeyFamily("events:{}", AS_LONG_AS_EVENTS, "the stream of a question's or job's events")
answer_key = KeyFamily("answer:{}", AS_LONG_AS_EVENTS, "a question's final Answer")
index_report_key = KeyFamily("index:{}", AS_LONG_AS_EVENTS, "an index job's final ScanReport")
index_progress_key = KeyFamily(
    "index:{}:progress",
    AS_LONG_AS_EVENTS,
    "an index job's counters (hash: files and bytes, total and done, failed, chunks, ...)",
)
index_recorded_key = KeyFamily(
    "index:{}:recorded",
    AS_LONG_AS_EVENTS,
    "the paths an index job counted (set)",
)
index_cancelled_key = KeyFamily(
    "index:{}:cancelled",
    AS_LONG_AS_EVENTS,
    "set by DELETE /v1/index/{id}: the job's batches not yet started are skipped",
)
cancelled_key = KeyFamily(
    "cancelled:{}", AS_LONG_AS_EVENTS, "set by DELETE /v1/questions/{id}: the question's stages are skipped"
)
stream_kind_key = KeyFamily("stream-kind:{}", AS_LONG_AS_EVENTS, "q or i: a question or index job accepted")
# The gateway's streams not yet finished (sorted set: ``<kind>:<id>`` by when accepted), for metrics;
# members leave as their streams end.
METRICS_PENDING_KEY = f"{PREFIX}metrics:pending"
METRICS_PENDING_LIFETIME = UNTIL_DELETED

# A caller's questions: each as asked, the caller's history, each conversation's turns (ids by caller).
asked_key = KeyFamily("question:{}", AS_LONG_AS_EVENTS, "the Question as it was accepted")
history_key = KeyFamily("history:{}", AS_LONG_AS_EVENTS, "a caller's question ids by time (sorted set)")
conversation_key = KeyFamily("conversation:{}:{}", AS_LONG_AS_EVENTS, "a conversation's question ids (list)")
rate_key = KeyFamily(
    "rate:{}:{}:{}", Lifetime(lambda _: 120), "a caller's requests against a budget in one minute's window"
)

# Folders: those watched, and each folder's latest index job and latest finished report (hashes).
WATCHED_ROOTS_KEY = f"{PREFIX}watch:roots"  # folder -> WatchedRoot
WATCHED_ROOTS_LIFETIME = UNTIL_DELETED
LIBRARY_JOBS_KEY = f"{PREFIX}library:jobs"  # folder -> its latest index job (id, when it started)
LIBRARY_JOBS_LIFETIME = UNTIL_DELETED
LIBRARY_REPORTS_KEY = f"{PREFIX}library:reports"  # folder -> its latest finished job's ScanReport
LIBRARY_REPORTS_LIFETIME = UNTIL_DELETED

# Scraping: one run at a time, holding the running job's id for its hard time limit and a minute.
SCRAPE_LOCK_KEY = f"{PREFIX}scrape:running"
SCRAPE_LOCK_LIFETIME = Lifetime(lambda s: s.job_time_limit_s + 60)
scrape_job_key = KeyFamily("scrape:job:{}", AS_LONG_AS_EVENTS, "marks a job whose events may be followed")

# Reranker workers' RerankerStatus, for /healthz: three heartbeats, so a dead worker's goes by itself.
reranker_status_key = KeyFamily(
    "reranker:{}", Lifetime(lambda s: 3 * s.reranker_heartbeat_s), "a reranker worker's RerankerStatus"
)
RERANKER_STATUS_PREFIX = reranker_status_key("")

# The synthesizer's map stages in flight (sorted set: question id by last progress), swept for stalls
# (services.synthesizer.stalls) by one worker at a time; members leave with their reduce or record.
MAP_STAGES_KEY = f"{PREFIX}map-stages"
MAP_STAGES_LIFETIME = UNTIL_DELETED
MAP_SWEEP_LOCK_KEY = f"{PREFIX}map-stages:sweep"
MAP_SWEEP_LOCK_LIFETIME = Lifetime(lambda s: s.question_stall_check_s)
map_stage_key = KeyFamily("map-stage:{}", AS_LONG_AS_EVENTS, "what resending a map stage needs (a MapStage)")

# kombu's unacknowledged-message bookkeeping for workers serving only question queues; a sweep of it
# takes milliseconds, so its lock is short.
QUESTION_UNACKED_KEY = "unacked:question"
QUESTION_UNACKED_INDEX_KEY = "unacked_index:question"
QUESTION_UNACKED_MUTEX_KEY = "unacked_mutex:question"
QUESTION_UNACKED_MUTEX_LIFETIME = Lifetime(lambda _: 10)
