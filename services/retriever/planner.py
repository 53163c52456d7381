"""Rule-based research planner: the question itself as the search, plus the hard keywords in it."""

from __future__ import annotations

import re

from shared.contracts import Plan, Strategy

QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”|`([^`]{2,80})`")
IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][\w.]*"  # dotted.names
    r"|[a-z]+_[a-z0-9_]+"  # snake_case
    r"|[A-Z][a-z0-9]+[A-Z]\w*"  # CamelCase
    r"|[A-Z]{2,}\d*"  # ACRONYMS
    r"|v?\d+\.\d+(?:\.\d+)*)"  # versions
    r"\b"
)
EXHAUSTIVE_CUES = re.compile(r"\b(all|every|list|compare|overview|summari[sz]e|everything)\b", re.I)


def hard_keywords(question: str) -> list[str]:
    """Quoted phrases and identifier-like tokens: words that must match exactly, not by meaning."""
    found: list[str] = []
    for match in QUOTED.finditer(question):
        found.append(next(group for group in match.groups() if group))
    found.extend(match.group(0) for match in IDENTIFIER.finditer(question))
    return list(dict.fromkeys(word for word in found if word.strip()))


def rule_based_plan(question: str) -> Plan:
    strategy = Strategy.EXHAUSTIVE if EXHAUSTIVE_CUES.search(question) else Strategy.PRECISE
    return Plan(strategy=strategy, variations=[question.strip()], hard_keywords=hard_keywords(question))
