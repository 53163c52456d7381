"""Give back, after a lost broker connection, the messages a worker had taken but not started.

When a worker's Redis connection drops (Redis restarted, a network blip), kombu tries to requeue
the worker's unacknowledged messages at once; while Redis is down that fails, and Celery forgets
the messages it had prefetched. They would sit in Redis's unacked set until the visibility timeout
(an hour for index tasks) and hold their whole job up that long. This consumer step remembers
them when the connection drops and requeues them on the new connection. Tasks still running keep
their message: they acknowledge it when they finish, so nothing runs twice.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from celery import bootsteps
from celery.worker.state import active_requests
from kombu.transport import redis as kombu_redis
from redis._parsers.base import BaseParser

log = logging.getLogger(__name__)


_KOMBU_CONNPARAMS = kombu_redis.Channel._connparams


def _connparams_of_an_open_connection(channel: Any, asynchronous: bool = False) -> Any:
    """kombu's own parameters, or a connection error if the channel's connection is closed.

    After Redis restarts, a channel of the broken connection is still used: its close requeues
    the channel's messages, and a task that was running acknowledges its message on it. Its
    transport is closed by then and kombu fails with ``AttributeError``, which Celery treats as
    fatal: every worker died when Redis restarted. As a connection error instead, the requeue is
    left to :class:`RequeueAfterReconnect` and the late acknowledgement is logged and dropped
    (the message comes back after the visibility timeout, and indexing it again changes nothing).
    """
    transport = channel.connection
    if transport is None or transport.client is None:
        raise redis.ConnectionError("this channel's broker connection is closed")
    return _KOMBU_CONNPARAMS(channel, asynchronous=asynchronous)


def install_closed_connection_guard() -> None:
    """Patched on kombu's class rather than through a custom ``broker_transport``, which would
    change the broker URL's scheme that Flower reads."""
    kombu_redis.Channel._connparams = _connparams_of_an_open_connection  # type: ignore[method-assign]


class RedisCannotPersistError(redis.ConnectionError):
    """Redis refuses every write because it cannot save it (``MISCONF``: its disk is full or not
    writable); it takes writes again by itself once its append-only file can be written."""


def install_cannot_persist_as_outage() -> None:
    """Make redis-py raise :class:`RedisCannotPersistError`, a connection error, for ``MISCONF``.

    As a plain ``ResponseError`` it killed every worker ("Unrecoverable error" from the
    acknowledgement kombu could not write) and failed tasks mid-write. As a connection error it is
    the outage it is: clients retry it (``shared.events.OUTAGE_RETRY``), kombu reconnects instead of
    stopping the worker, and the gateway answers 503. Registered in redis-py's table of error
    prefixes, which its parsers (pure Python and hiredis, sync and asyncio) consult.
    """
    BaseParser.EXCEPTION_CLASSES["MISCONF"] = RedisCannotPersistError


class RequeueAfterReconnect(bootsteps.StartStopStep):
    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.taken: set[str] = set()

    def stop(self, parent: Any) -> None:
        """The connection is going: note what its channel delivered and nobody acknowledged."""
        channel = getattr(parent.task_consumer, "channel", None)
        if channel is not None:
            # kombu's record of the channel's delivered, unacknowledged messages by delivery tag
            # (the field of Redis's unacked hash): the very set it failed to requeue.
            self.taken |= set(channel.qos._delivered)

    def start(self, parent: Any) -> None:
        """Connected again: requeue what was taken and is not running, at the head of its queue."""
        running = {request.message.delivery_tag for request in active_requests}
        orphans = self.taken - running
        self.taken = set()
        qos = parent.task_consumer.channel.qos
        for tag in orphans:
            qos.restore_by_tag(tag, leftmost=True)
        if orphans:
            log.warning("requeued %d messages taken before the broker connection was lost", len(orphans))
