"""The retriever's configuration comes from its settings group alone."""

from __future__ import annotations

from dataclasses import MISSING, fields

from services.retriever.search import RetrievalConfig
from shared.contracts import Strategy
from shared.settings import RetrievalSettings


def test_retrieval_config_has_no_defaults_of_its_own_but_the_legs() -> None:
    """A default here could differ from the setting's (the lead bonus was 0.0 here, 0.25 there)."""
    defaulted = [
        f.name
        for f in fields(RetrievalConfig)
        if f.default is not MISSING or f.default_factory is not MISSING
    ]
    assert defaulted == ["legs"]


def test_retrieval_config_takes_each_knob_from_the_retrieval_settings() -> None:
    settings = RetrievalSettings(
        dense_lead_bonus=0.4, dense_centroid_weight=0.2, fusion_guard_top=7, pool_exact=9
    )
    exhaustive = RetrievalConfig.from_settings(settings, Strategy.EXHAUSTIVE)
    assert (exhaustive.lead_bonus, exhaustive.centroid_weight, exhaustive.guard_top) == (0.4, 0.2, 7)
    assert (exhaustive.pool, exhaustive.keep, exhaustive.exact_pool) == (80, 60, 9)
    assert RetrievalConfig.from_settings(RetrievalSettings(), Strategy.PRECISE).lead_bonus == 0.25
