"""Check every cited sentence against the passages it cites, and correct or remove what fails.

The judge is the LLM when one is configured (the first ``max_llm_claims`` sentences, to bound the
cost), with a lexical floor a too-agreeable small model cannot override; otherwise the sentence must
share most of its content words with the cited passage. One bounded self-correction pass lets the
LLM restate each failed sentence it judged from its evidence (at most ``max_llm_claims`` rewrites);
what still fails is removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from services.synthesizer.llm_schemas import Judgement, Rewrite
from services.synthesizer.narrator import Claim, clean_sentence
from services.synthesizer.prompts import judge_messages, rewrite_messages
from services.synthesizer.text_support import support
from shared.contracts import Candidate, Fact
from shared.interfaces import LLM, LLMError

SUPPORT_THRESHOLD = 0.5
LLM_LEXICAL_FLOOR = 0.25
EVIDENCE_CONTEXT_CHARS = 200


@dataclass(frozen=True)
class CheckedClaim:
    claim: Claim
    supported: bool
    score: float
    method: Literal["lexical", "llm"]
    action: Literal["kept", "corrected", "removed"]


@dataclass
class Verifier:
    facts: list[Fact]
    by_chunk: dict[str, Candidate]
    llm: LLM | None
    max_llm_claims: int
    self_correct: bool

    def evidence(self, claim: Claim) -> list[tuple[str, str]]:
        """Each cited quote with some of the passage around it, as the judge sees it."""
        blocks = []
        for index in claim.facts:
            fact = self.facts[index]
            candidate = self.by_chunk[fact.chunk_id]
            start = max(0, fact.quote_start - candidate.text_start - EVIDENCE_CONTEXT_CHARS)
            end = fact.quote_start - candidate.text_start + len(fact.quote) + EVIDENCE_CONTEXT_CHARS
            blocks.append((fact.source_title, candidate.text[start:end]))
        return blocks

    def lexical_score(self, text: str, claim: Claim) -> float:
        """Support of the sentence by the passages it cites or by their quotes (a quote may run past
        its passage to finish a sentence the chunk boundary cut, and is checked against the file)."""
        return max(
            max(support(text, self.by_chunk[self.facts[i].chunk_id].text), support(text, self.facts[i].quote))
            for i in claim.facts
        )

    def judge(self, text: str, claim: Claim, use_llm: bool) -> tuple[bool, float, Literal["lexical", "llm"]]:
        score = self.lexical_score(text, claim)
        if use_llm and self.llm is not None:
            try:
                verdict = self.llm.generate_json(judge_messages(text, self.evidence(claim)), Judgement, 16)
                return verdict.supported and score >= LLM_LEXICAL_FLOOR, score, "llm"
            except LLMError:
                pass
        return score >= SUPPORT_THRESHOLD, score, "lexical"

    def rewrite(self, claim: Claim) -> str | None:
        if self.llm is None:
            return None
        try:
            reply = self.llm.generate_json(rewrite_messages(claim.text, self.evidence(claim)), Rewrite, 80)
        except LLMError:
            return None
        return clean_sentence(reply.text) or None

    def check(self, claims: list[Claim]) -> list[CheckedClaim]:
        checked = []
        for position, claim in enumerate(claims):
            use_llm = position < self.max_llm_claims
            supported, score, method = self.judge(claim.text, claim, use_llm)
            if supported:
                checked.append(CheckedClaim(claim, True, score, method, "kept"))
                continue
            if use_llm and self.self_correct and (text := self.rewrite(claim)):
                fixed = Claim(text, claim.facts)
                supported, score, method = self.judge(text, fixed, use_llm)
                if supported:
                    checked.append(CheckedClaim(fixed, True, score, method, "corrected"))
                    continue
            checked.append(CheckedClaim(claim, False, score, method, "removed"))
        return checked
