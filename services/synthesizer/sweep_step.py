"""A Celery consumer step: a worker that serves the reduce queue sweeps for stalled map stages."""

from __future__ import annotations

from typing import Any

from celery import bootsteps

from services.synthesizer.stall_sweep import resume_stalled_stages
from shared.settings import get_settings
from shared.topology import MAP_CHORD, TASK_QUEUES


class ResumeStalledStages(bootsteps.StartStopStep):
    """Every ``question_stall_check_s``, in a worker that consumes the reduce's queue."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.sweeps: Any = None

    def start(self, parent: Any) -> None:
        if TASK_QUEUES[MAP_CHORD.body] in parent.app.amqp.queues.consume_from:
            interval_s = get_settings().question_stall_check_s
            self.sweeps = parent.timer.call_repeatedly(interval_s, resume_stalled_stages)

    def stop(self, parent: Any) -> None:
        """The consumer restarts after a lost connection and starts its steps again: one timer at a time."""
        if self.sweeps is not None:
            self.sweeps.cancel()
            self.sweeps = None
