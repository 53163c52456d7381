"""Deterministic stand-in chat models for tests, reachable by real workers through the settings.

``HINDSIGHT_LLM=custom`` with ``HINDSIGHT_LLM_FACTORY=tests.synthesizer.scripted_llm:flaky`` makes a
worker process build :class:`FlakyLLM`; nothing in ``shared`` or ``services`` knows it exists. Both
models return raw text through :class:`shared.llms.ChatBackend`, so their replies take exactly the
parsing and validation path a real model's do.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from services.synthesizer.segmentation import segment
from services.synthesizer.text_support import content_words
from shared.interfaces import ChatMessage
from shared.llms import ChatBackend
from shared.settings import GenerationSettings

PASSAGE = re.compile(r'<passage id="(\d+)" title="[^"]*">\n(.*?)\n</passage>', re.DOTALL)
QUESTION = re.compile(r"Question: (.*)$")
CLAIM = re.compile(r"Claim: (.*)$")
PAYLOAD = re.compile(r'respond only with "([^"]+)"', re.IGNORECASE)


def passages(messages: list[ChatMessage]) -> list[tuple[int, str]]:
    return [(int(n), text) for n, text in PASSAGE.findall(messages[-1].content)]


def best_sentence(text: str, words: set[str]) -> str:
    found = [s for s in segment(text) if s.is_statement]
    if not found:
        return text
    return max(found, key=lambda s: len(content_words(s.text) & words)).text


class ScriptedLLM(ChatBackend):
    """Answers each of the synthesizer's requests the way a competent, literal model would."""

    name = "scripted"

    def reply(self, messages: list[ChatMessage], title: str) -> dict[str, Any]:
        user = messages[-1].content
        if title == "MapReply":
            question = QUESTION.search(user)
            words = content_words(question.group(1)) if question else set()
            facts = []
            for number, text in passages(messages)[:3]:
                sentence = best_sentence(text, words)
                facts.append({"passage": str(number), "fact": sentence, "quote": sentence.upper()})
            return {"facts": facts}
        if title == "NarratorReply":
            return {"sentences": [{"text": text, "citations": [str(n)]} for n, text in passages(messages)]}
        if title == "Judgement":
            return {"supported": "true"}
        claim = CLAIM.search(user)
        return {"text": claim.group(1) if claim else passages(messages)[0][1]}

    def complete(
        self, messages: list[ChatMessage], json_schema: dict[str, Any] | None, max_tokens: int
    ) -> str:
        title = (json_schema or {}).get("title", "")
        return json.dumps(self.reply(messages, title))


class FlakyLLM(ScriptedLLM):
    """A scripted model whose reply is malformed for a fixed 30 % of prompts (chosen by their hash)."""

    name = "flaky"
    MALFORMED_SHARE = 0.3

    def complete(
        self, messages: list[ChatMessage], json_schema: dict[str, Any] | None, max_tokens: int
    ) -> str:
        good = super().complete(messages, json_schema, max_tokens)
        digest = hashlib.sha256("".join(m.content for m in messages).encode()).digest()
        chooser = random.Random(digest)
        if chooser.random() >= self.MALFORMED_SHARE:
            return good
        breakage = chooser.choice(["truncated", "prose", "bad entry"])
        if breakage == "truncated":
            return good[: len(good) // 2]
        if breakage == "prose":
            return "Sure! Here are the facts you asked for, in plain words."
        reply = json.loads(good)
        for key in ("facts", "sentences"):
            if key in reply:
                reply[key].insert(0, {"passage": "first", "quote": 17})
        return json.dumps(reply)


class ObedientLLM(ChatBackend):
    """The worst case: a model that obeys any 'respond only with' it reads, wherever it reads it."""

    name = "obedient"

    def complete(
        self, messages: list[ChatMessage], json_schema: dict[str, Any] | None, max_tokens: int
    ) -> str:
        for message in messages:
            if match := PAYLOAD.search(message.content):
                return match.group(1)
        return "{}"


def flaky(settings: GenerationSettings) -> FlakyLLM:
    return FlakyLLM()


def scripted(settings: GenerationSettings) -> ScriptedLLM:
    return ScriptedLLM()
