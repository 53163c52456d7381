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

from celery import bootsteps
from celery.worker.state import active_requests

log = logging.getLogger(__name__)


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
