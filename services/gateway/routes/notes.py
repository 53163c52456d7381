"""``POST /v1/questions/{id}/note``: the answer saved as a Markdown note (``shared.notes``) in a folder
the caller chose inside the roots (403 outside, 404 when it is not a folder), for the page's "Save as
note"; indexing that folder then finds it like any other note. A folder the gateway may not write
(a read-only library in Docker) is a 409 that says so."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, status

from services.gateway.deps import RedisDep, SettingsDep
from services.gateway.history import asked_question, stored_answer
from services.gateway.paths import confined_folder
from services.gateway.schemas import NoteRequest, NoteSaved, QuestionId, error_responses
from shared.notes import save_note

router = APIRouter(prefix="/v1/questions", tags=["questions"])


@router.post(
    "/{question_id}/note",
    status_code=status.HTTP_201_CREATED,
    response_model=NoteSaved,
    responses=error_responses(403, 409),
)
async def save_as_note(
    question_id: QuestionId, body: NoteRequest, client: RedisDep, settings: SettingsDep
) -> NoteSaved:
    folder = confined_folder(body.folder, settings.indexing, settings.roots_file)
    answer = await stored_answer(client, question_id)
    asked = await asked_question(client, question_id)
    if answer is None or asked is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no answer for question {question_id}")
    try:
        path = await asyncio.to_thread(save_note, folder, asked.question, answer)
    except OSError as exc:
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"cannot write a note in {folder}: {exc.strerror or exc}"
        ) from exc
    return NoteSaved(path=str(path))
