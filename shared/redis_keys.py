"""Every Redis key the services read or write, and how long each lives: the only place they are spelled.

A key with an id in it is a function of the id. Beside each is its :class:`Lifetime`: kept until
deleted, for a fixed time, or for as long as a setting says (most live as long as the events of
the question or job they belong to, ``event_ttl_s``). Celery's own keys (results, chords, queues)
are Celery's; the unacknowledged-message keys of question workers are kombu's, named here because
``shared.celery_app`` chooses them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared.settings import Settings

PREFIX = "hindsight:"


@dataclass(frozen=True)
class Lifetime:
    """How long a key lives: ``of(settings)`` seconds after its last write, or until deleted when ``of``
    is ``None``."""

    of: Callable[[Settings], float] | None = None

    def ttl_s(self, settings: Settings) -> int:
        """Seconds to pass as the key's expiry (at least one); a key kept until deleted has none."""
        if self.of is None:
            raise ValueError("this key is kept until deleted: it has no expiry")
        return max(1, round(self.of(settings)))


UNTIL_DELETED = Lifetime()
AS_LONG_AS_EVENTS = Lifetime(lambda s: s.event_ttl_s)

# A question's or job's event stream (shared.events), its answer or scan report, and its id's kind.


def events_key(stream_id: str) -> str:
    """The Redis stream of a question's or an index or scrape job's events."""
    return f"{PREFIX}events:{stream_id}"


EVENTS_LIFETIME = AS_LONG_AS_EVENTS  # counted from the last event


def answer_key(question_id: str) -> str:
    """A question's final :class:`Answer`."""
    return f"{PREFIX}answer:{question_id}"


ANSWER_LIFETIME = AS_LONG_AS_EVENTS


def index_report_key(job_id: str) -> str:
    """An index job's final :class:`ScanReport`."""
    return f"{PREFIX}index:{job_id}"


INDEX_REPORT_LIFETIME = AS_LONG_AS_EVENTS


def index_progress_key(job_id: str) -> str:
    """An index job's counters (hash: total, done, failed, chunks, current, t0, t1)."""
    return f"{PREFIX}index:{job_id}:progress"


INDEX_PROGRESS_LIFETIME = AS_LONG_AS_EVENTS


def index_recorded_key(job_id: str) -> str:
    """The paths an index job has counted (set), so a redelivered batch counts each once."""
    return f"{PREFIX}index:{job_id}:recorded"


INDEX_RECORDED_LIFETIME = AS_LONG_AS_EVENTS


def cancelled_key(question_id: str) -> str:
    """Set by ``DELETE /v1/questions/{id}``: the question's stages not yet started are skipped, and
    the gateway answers 404 for it."""
    return f"{PREFIX}cancelled:{question_id}"


CANCELLED_LIFETIME = AS_LONG_AS_EVENTS


def stream_kind_key(stream_id: str) -> str:
    """Which kind of stream a gateway accepted under this id: ``q`` (question) or ``i`` (index job)."""
    return f"{PREFIX}stream-kind:{stream_id}"


STREAM_KIND_LIFETIME = AS_LONG_AS_EVENTS

# The gateway's streams not yet finished (sorted set: ``<kind>:<id>`` by when accepted), for metrics.
METRICS_PENDING_KEY = f"{PREFIX}metrics:pending"
METRICS_PENDING_LIFETIME = UNTIL_DELETED  # members leave as their streams end

# A caller's questions: history (sorted set of ids by time), each question, each conversation's turns.


def history_key(caller: str) -> str:
    """The ids of the caller's questions, newest by score."""
    return f"{PREFIX}history:{caller}"


HISTORY_LIFETIME = AS_LONG_AS_EVENTS  # from the caller's last question


def asked_key(question_id: str) -> str:
    """The :class:`Question` as it was asked."""
    return f"{PREFIX}question:{question_id}"


ASKED_LIFETIME = AS_LONG_AS_EVENTS


def conversation_key(caller: str, conversation_id: str) -> str:
    """The ids of a conversation's questions, in order (list)."""
    return f"{PREFIX}conversation:{caller}:{conversation_id}"


CONVERSATION_LIFETIME = AS_LONG_AS_EVENTS  # from its last question


def rate_key(caller: str, budget: str, window: int) -> str:
    """Requests a caller made against one budget in one one-minute window (counter)."""
    return f"{PREFIX}rate:{caller}:{budget}:{window}"


RATE_LIFETIME = Lifetime(lambda _: 120)  # the window and the next

# Index jobs and folders.
WATCHED_ROOTS_KEY = f"{PREFIX}watch:roots"  # hash: folder -> WatchedRoot
WATCHED_ROOTS_LIFETIME = UNTIL_DELETED
LIBRARY_JOBS_KEY = f"{PREFIX}library:jobs"  # hash: folder -> its latest index job (id, when it started)
LIBRARY_JOBS_LIFETIME = UNTIL_DELETED
LIBRARY_REPORTS_KEY = f"{PREFIX}library:reports"  # hash: folder -> its latest finished job's ScanReport
LIBRARY_REPORTS_LIFETIME = UNTIL_DELETED

# Scraping: one run at a time.
SCRAPE_LOCK_KEY = f"{PREFIX}scrape:running"  # the running job's id
SCRAPE_LOCK_LIFETIME = Lifetime(lambda s: s.job_time_limit_s + 60)  # its hard limit and a minute


def scrape_job_key(job_id: str) -> str:
    """Marks ``job_id`` as a scrape job the gateway or the schedule started (its events can be followed)."""
    return f"{PREFIX}scrape:job:{job_id}"


SCRAPE_JOB_LIFETIME = AS_LONG_AS_EVENTS

# Reranker workers' status, for /healthz.
RERANKER_STATUS_PREFIX = f"{PREFIX}reranker:"


def reranker_status_key(worker: str) -> str:
    """Where a reranker worker publishes its :class:`RerankerStatus`."""
    return f"{RERANKER_STATUS_PREFIX}{worker}"


RERANKER_STATUS_LIFETIME = Lifetime(lambda s: 3 * s.reranker_heartbeat_s)  # three beats

# The synthesizer's map stages in flight, swept for stalls (services.synthesizer.resume).
MAP_STAGES_KEY = f"{PREFIX}map-stages"  # sorted set: question id by its last progress
MAP_STAGES_LIFETIME = UNTIL_DELETED  # members leave with their reduce or their record
MAP_SWEEP_LOCK_KEY = f"{PREFIX}map-stages:sweep"  # one sweeping worker at a time
MAP_SWEEP_LOCK_LIFETIME = Lifetime(lambda s: s.question_stall_check_s)


def map_stage_key(question_id: str) -> str:
    """What sending a question's map batches or its reduce again needs (a ``MapStage``)."""
    return f"{PREFIX}map-stage:{question_id}"


MAP_STAGE_LIFETIME = AS_LONG_AS_EVENTS

# kombu's unacknowledged-message bookkeeping for workers serving only question queues.
QUESTION_UNACKED_KEY = "unacked:question"
QUESTION_UNACKED_INDEX_KEY = "unacked_index:question"
QUESTION_UNACKED_MUTEX_KEY = "unacked_mutex:question"
QUESTION_UNACKED_MUTEX_LIFETIME = Lifetime(lambda _: 10)  # a sweep takes milliseconds
