"""One question answered two ways over the same store: through the services, and in one process.

``InProcessPipeline.answer`` calls the plain functions behind each Celery task in the order the
gateway's chain runs them (``pipeline.question``) with the same settings, without a broker, event
streams or JSON between stages; ``ServiceStack`` starts the real
local stack (``cli.local_stack``: redis-server, one worker per queue, the gateway) and asks over
HTTP, timing from the POST to the answer event. The difference is what the distribution costs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cli.client import GatewayClient
from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, wait_until
from pipeline.question import QuestionParts, answer
from shared.contracts import Answer, Question
from shared.settings import Settings
from testing.processes import free_port


class InProcessPipeline:
    """The question path's stages in this process (``pipeline.question``), built once."""

    def __init__(self, settings: Settings) -> None:
        self.parts = QuestionParts.from_settings(settings)

    def answer(self, question: str, seconds: dict[str, float] | None = None) -> Answer:
        """The answer; ``seconds``, where given, gets each stage's seconds (``pipeline.question.answer``)."""
        return answer(Question(question_id=uuid.uuid4().hex, question=question), self.parts, seconds)


class ServiceStack:
    """A gateway client of a running local stack."""

    def __init__(self, client: GatewayClient) -> None:
        self.client = client

    def answer(self, question: str) -> Answer:
        question_id = self.client.ask(question)
        for event in self.client.question_events(question_id):
            if event.stage == "answer":
                if event.status != "done":
                    raise RuntimeError(f"question failed through the services: {event.detail}")
                return Answer.model_validate(event.data["answer"])
        raise RuntimeError(f"the event stream of {question_id} ended without an answer")


def private_stack_settings(settings: Settings, data_dir: Path, **changes: object) -> Settings:
    """``settings`` for a stack of its own over ``data_dir``: Redis and the gateway on free loopback
    ports (the gateway's URL with them), and any other ``changes``."""
    port = free_port()
    return settings.replace(
        data_dir=data_dir,
        redis_url=f"redis://127.0.0.1:{free_port()}/0",
        gateway_port=port,
        gateway_url=f"http://127.0.0.1:{port}",
        **changes,
    )


@contextmanager
def service_stack(settings: Settings, extra_env: dict[str, str]) -> Iterator[ServiceStack]:
    """``hindsight up`` on the given settings (its own redis-server, workers, gateway), then down.

    ``extra_env`` reaches every process (the stack pins only its data folder, Redis and gateway).
    """
    ensure_local_key(settings)
    stack = LocalStack(settings)
    saved = {key: os.environ.get(key) for key in extra_env}
    os.environ.update(extra_env)
    try:
        stack.up()
        client = GatewayClient(settings.gateway.gateway_url, client_key(settings), timeout_s=120)

        def healthy() -> bool:
            try:
                return client.health()["status"] == "ok"
            except Exception:
                return False

        wait_until(healthy, 180, "workers and gateway")
        yield ServiceStack(client)
    finally:
        stack.down()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def linked_store(data_dir: Path, store: Path) -> None:
    """Point a data folder's store at a prebuilt one, so both paths read the very same files."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "store").symlink_to(store.resolve(), target_is_directory=True)
