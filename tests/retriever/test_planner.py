"""The planner: a validated LLM plan when the LLM delivers, the rule-based plan when it does not.

The LLMs here are small in-test objects with the ``LLM`` protocol: no model server runs in tests,
and what is tested is the planner's handling of the reply (valid, garbage, error, timeout).
"""

from __future__ import annotations

import threading
from typing import Any

from services.retriever.keywords import StoreIdf, hard_keywords, pattern_keywords
from services.retriever.planner import PlanDraft, make_plan, rule_based_plan
from shared.contracts import Strategy
from shared.interfaces import ChatMessage, LLMError

QUESTION = "Why does asyncio.run() raise RuntimeError: Event loop is closed in Python 3.11?"


class ScriptedLLM:
    """Returns a fixed reply (or raises it) and records the prompts it saw."""

    name = "scripted"

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.prompts: list[list[ChatMessage]] = []

    def generate_json(self, messages: list[ChatMessage], schema: type, max_tokens: int = 512) -> Any:
        self.prompts.append(messages)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply

    def generate_text(self, messages: list[ChatMessage], max_tokens: int = 512) -> str:
        raise LLMError("not used")


class StuckLLM(ScriptedLLM):
    """Never answers within the planner's timeout."""

    def __init__(self) -> None:
        super().__init__(None)
        self.release = threading.Event()

    def generate_json(self, messages: list[ChatMessage], schema: type, max_tokens: int = 512) -> Any:
        self.release.wait(30)
        raise LLMError("released")


def plan_for(llm: Any, timeout_s: float = 5.0):
    return make_plan(QUESTION, llm, timeout_s=timeout_s, max_tokens=256, max_keywords=6)


def test_valid_llm_plan_is_used_with_the_question_kept_first() -> None:
    draft = PlanDraft(
        strategy=Strategy.PRECISE,
        variations=["asyncio closed event loop error", "RuntimeError event loop closed after asyncio.run"],
        hard_keywords=["Event loop is closed"],
        hyde_passage="asyncio.run() closes the loop when it returns; reusing it raises RuntimeError.",
    )
    llm = ScriptedLLM(draft)
    outcome = plan_for(llm)
    assert outcome.fallback_reason is None
    assert outcome.plan.planner == "llm"
    assert outcome.plan.variations[0] == QUESTION
    assert outcome.plan.variations[1:] == draft.variations
    assert outcome.plan.hyde_passage == draft.hyde_passage
    assert "Event loop is closed" in outcome.plan.hard_keywords
    assert "asyncio.run()" in outcome.plan.hard_keywords  # pattern keywords are never lost
    assert QUESTION in llm.prompts[0][-1].content


def test_garbage_reply_falls_back_to_rules() -> None:
    outcome = plan_for(ScriptedLLM({"strategy": "sideways", "variations": "not a list"}))
    assert outcome.plan.planner == "rules"
    assert outcome.fallback_reason and "schema" in outcome.fallback_reason
    assert outcome.plan.variations[0] == QUESTION


def test_non_json_text_reply_falls_back_to_rules() -> None:
    outcome = plan_for(ScriptedLLM("Sure! Here is a plan: search for stuff"))
    assert outcome.plan.planner == "rules"
    assert outcome.fallback_reason is not None


def test_llm_error_falls_back_to_rules_with_the_reason() -> None:
    outcome = plan_for(ScriptedLLM(LLMError("model answered invalid JSON")))
    assert outcome.plan.planner == "rules"
    assert "invalid JSON" in (outcome.fallback_reason or "")


def test_llm_that_times_out_falls_back_to_rules() -> None:
    llm = StuckLLM()
    try:
        outcome = plan_for(llm, timeout_s=0.2)
    finally:
        llm.release.set()
    assert outcome.plan.planner == "rules"
    assert "timed out" in (outcome.fallback_reason or "")
    assert outcome.plan.hard_keywords


def test_no_llm_gives_rule_plan_without_hyde_or_fallback_reason() -> None:
    outcome = plan_for(None)
    assert outcome.plan.planner == "rules"
    assert outcome.fallback_reason is None
    assert outcome.plan.hyde_passage is None
    assert outcome.plan.variations == [QUESTION]


def test_pattern_keywords_find_identifiers_errors_versions_and_quotes() -> None:
    keywords = pattern_keywords(QUESTION)
    assert keywords[:3] == ["asyncio.run()", "RuntimeError", "3.11"]
    assert pattern_keywords('What did I note about "tail call" and snake_case_name?') == [
        "tail call",
        "snake_case_name",
    ]
    assert pattern_keywords("how do I bake bread") == []


def test_rule_plan_strategy_follows_exhaustive_cues() -> None:
    assert rule_based_plan("List every note about trains").strategy is Strategy.EXHAUSTIVE
    assert rule_based_plan("When does the starter double?").strategy is Strategy.PRECISE


def test_idf_adds_rare_plain_words_from_the_store(corpus) -> None:
    idf = StoreIdf(corpus.store, cap=3)
    keywords = hard_keywords("what temperature for the dutch oven and the starter", idf, limit=6)
    assert "dutch" in keywords
    assert "temperature" not in keywords  # no chunk holds it: it cannot help find one
    assert "what" not in keywords
