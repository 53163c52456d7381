"""A follow-up made standalone before it is planned: the LLM's rewrite when it delivers one, else a
rule that carries the earlier question's subject and terms (the default, extractive setup has no LLM).

The LLMs are small in-test objects with the ``LLM`` protocol (no model server runs in tests); what is
tested is what the retriever does with their replies.
"""

from __future__ import annotations

import time
from typing import Any

from services.retriever.followup import Rewrite, leans_on_context, rule_rewrite, standalone_question
from services.retriever.stages import plan
from shared.contracts import Question, Turn
from shared.events import StageReport
from shared.interfaces import ChatMessage, LLMError
from shared.settings import Settings
from shared.stage_events import PlanData

STARTER = Turn(
    question="What is my sourdough starter called?",
    answer="My starter is called Clint. It lives in the fridge and gets fed every Sunday.",
)


class RewritingLLM:
    """Replies with a fixed rewrite (or raises, or stalls), recording the prompts it saw."""

    name = "rewriting"

    def __init__(self, reply: Any, delay_s: float = 0.0) -> None:
        self.reply = reply
        self.delay_s = delay_s
        self.prompts: list[list[ChatMessage]] = []

    def generate_json(self, messages: list[ChatMessage], schema: type, max_tokens: int = 512) -> Any:
        self.prompts.append(messages)
        time.sleep(self.delay_s)
        if isinstance(self.reply, Exception):
            raise self.reply
        return schema.model_validate(self.reply) if schema is Rewrite else self.reply

    def generate_text(self, messages: list[ChatMessage], max_tokens: int = 512) -> str:
        raise LLMError("not used")


def test_rule_carries_the_earlier_questions_terms_into_a_follow_up_that_points_back() -> None:
    standalone = rule_rewrite("How often is it fed?", [STARTER])
    assert standalone.question == "How often is it fed? (sourdough starter called)"
    assert standalone.rewritten_by == "rules"


def test_rule_leaves_a_follow_up_that_stands_on_its_own() -> None:
    asked = "What temperature does the Dutch oven need for baking bread?"
    assert not leans_on_context(asked)
    assert rule_rewrite(asked, [STARTER]).question == asked
    assert rule_rewrite(asked, [STARTER]).rewritten_by is None


def test_rule_follows_a_chain_through_what_the_previous_follow_up_searched_for() -> None:
    second = Turn(
        question="How often is it fed?", searched_for="How often is it fed? (sourdough starter called)"
    )
    assert rule_rewrite("And with which flour?", [STARTER, second]).question == (
        "And with which flour? (often fed sourdough starter called)"
    )


def test_llm_rewrite_is_searched_for_and_sees_the_conversation() -> None:
    llm = RewritingLLM({"question": "How often is the sourdough starter Clint fed?"})
    standalone = standalone_question("How often is it fed?", [STARTER], llm, timeout_s=5, max_tokens=64)
    assert standalone.question == "How often is the sourdough starter Clint fed?"
    assert standalone.rewritten_by == "llm"
    prompt = llm.prompts[0][-1].content
    assert "Q: What is my sourdough starter called?" in prompt and "Clint" in prompt


def test_a_failing_or_stalled_llm_hands_the_follow_up_to_the_rule_and_says_why() -> None:
    for llm, why in (
        (RewritingLLM(LLMError("model gone")), "model gone"),
        (RewritingLLM({}, 2.0), "timed out"),
    ):
        standalone = standalone_question("How often is it fed?", [STARTER], llm, timeout_s=0.3, max_tokens=64)
        assert standalone.question == "How often is it fed? (sourdough starter called)"
        assert why in (standalone.fallback_reason or "")


def test_plan_stage_hands_the_standalone_question_on_and_says_what_it_searched_for() -> None:
    question = Question(question_id="q2", question="How often is it fed?", history=[STARTER])
    report = StageReport()
    planned = plan(question, None, None, Settings().retrieval, report)
    assert planned.question == "How often is it fed? (sourdough starter called)"
    assert planned.plan.follow_up == "How often is it fed?"
    assert planned.plan.rewritten_by == "rules"
    assert planned.plan.variations[0] == planned.question
    assert report.detail.startswith(
        "follow-up searched for 'How often is it fed? (sourdough starter called)'"
    )
    assert isinstance(report.data, PlanData) and report.data.searched_for == planned.question


def test_plan_stage_leaves_a_first_question_as_asked() -> None:
    report = StageReport()
    planned = plan(
        Question(question_id="q1", question=STARTER.question), None, None, Settings().retrieval, report
    )
    assert planned.question == STARTER.question
    assert planned.plan.follow_up is None
    assert not report.detail.startswith("follow-up")
