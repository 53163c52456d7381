"""The map chord's fixed ids, so a batch or a reduce sent again joins the chord it belongs to.

Celery's chord join counts a header task id once: each batch runs under ``<question>:map:<index>``
and the chord's group under ``<question>:map``, so a batch that was only slow and is sent again by
the stall sweep (``stall_sweep``) is not counted twice.
"""

from __future__ import annotations

from celery import Signature, chord, group

from services.synthesizer.stalls import MapStage
from shared.celery_app import app
from shared.contracts import MapBatch
from shared.topology import MAP_CHORD


def chord_id(question_id: str) -> str:
    """The map chord's group id, fixed so that a batch sent again joins the same chord."""
    return f"{question_id}:map"


def batch_task_id(question_id: str, index: int) -> str:
    return f"{question_id}:map:{index}"


def map_signature(question_id: str, batch: MapBatch) -> Signature:
    """A map task under its fixed id, so a batch sent again counts once in the chord."""
    signature = app.signature(MAP_CHORD.header, args=[batch.to_payload()])
    return signature.set(task_id=batch_task_id(question_id, batch.batch_index))


def reduce_signature(stage: MapStage) -> Signature:
    """The chord's reduce, under the id of the task the chord replaced."""
    return app.signature(MAP_CHORD.body, args=[stage.question.to_payload()]).set(task_id=stage.reduce_task_id)


def map_chord(stage: MapStage, batches: list[MapBatch]) -> Signature:
    """One map task per batch, in parallel, then the reduce; the chord's id is fixed."""
    question_id = stage.question.question_id
    maps = chord([map_signature(question_id, b) for b in batches], reduce_signature(stage))
    # chord() unwraps its header into bare tasks and would draw a random group id; the header as a
    # group with its own id fixes the chord's id, so a batch sent again joins this chord.
    maps.tasks = group(maps.tasks, task_id=chord_id(question_id))
    return maps
