"""The mappers' chat model in the fault tests: the scripted model, answering each map batch after a pause.

It stands in for an Ollama server (which cannot run here) that takes its time over a batch, so a
test can kill a mapper while it holds a map task. Real workers build it through the settings:
``HINDSIGHT_LLM=custom`` with ``HINDSIGHT_LLM_FACTORY=tests.faults.slow_llm:slow_mapper``.
"""

from __future__ import annotations

import time
from typing import Any

from shared.interfaces import ChatMessage
from shared.settings import GenerationSettings
from tests.synthesizer.scripted_llm import ScriptedLLM

MAP_REPLY_DELAY_S = 1.5


class SlowMapperLLM(ScriptedLLM):
    name = "scripted, slow map replies"

    def reply(self, messages: list[ChatMessage], title: str) -> dict[str, Any]:
        if title == "MapReply":
            time.sleep(MAP_REPLY_DELAY_S)
        return super().reply(messages, title)


def slow_mapper(settings: GenerationSettings) -> SlowMapperLLM:
    return SlowMapperLLM()
