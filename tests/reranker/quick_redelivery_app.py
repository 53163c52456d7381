"""The rerank worker's Celery app with kombu sweeping unacked messages every second.

Kombu's Redis transport re-queues messages whose visibility timeout has passed only on a
periodic sweep, every ``unacked_restore_interval * unacked_restore_throttle`` seconds (100 s by
default). The redelivery test starts its workers from this module so that sweep runs every
second; the redelivery itself is the real transport's.
"""

from services.reranker.tasks import app

app.conf.broker_transport_options = {
    **app.conf.broker_transport_options,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
