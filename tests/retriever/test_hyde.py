"""HyDE modes: supplement runs HyDE only on a weak dense result set, and every decision says why."""

from __future__ import annotations

from dataclasses import replace

from services.retriever.hyde import HydeDraft, decide_hyde
from services.retriever.search import RetrievalConfig, Retriever
from shared.contracts import HydeMode, Plan, Strategy
from shared.settings import Settings
from tests.retriever.conftest import retrieval_config

from .test_fusion import hit
from .test_planner import ScriptedLLM

PASSAGE = "The global interpreter lock allows one thread at a time to execute Python bytecode."


def config(mode: HydeMode) -> RetrievalConfig:
    return retrieval_config(pool=10, keep=5, hyde_mode=mode, hyde_threshold_score=0.4, hyde_threshold_count=2)


def test_supplement_decision_counts_hits_above_the_score_threshold() -> None:
    strong = [hit("a", 0.8), hit("b", 0.5), hit("c", 0.1)]
    weak = [hit("a", 0.8), hit("b", 0.3)]
    assert not decide_hyde(HydeMode.SUPPLEMENT, strong, 0.4, 2).run
    decision = decide_hyde(HydeMode.SUPPLEMENT, weak, 0.4, 2)
    assert decision.run and "weak: 1 hit(s)" in decision.reason
    assert not decide_hyde(HydeMode.OFF, weak, 0.4, 2).run
    assert decide_hyde(HydeMode.FUSION, strong, 0.4, 2).run


def test_supplement_runs_hyde_on_a_weak_result_set(corpus) -> None:
    plan = Plan(variations=["zxqv plorb wimble fandangle"], hyde_passage=PASSAGE)
    candidates, report = Retriever(corpus.store, corpus.embedder).search(plan, config(HydeMode.SUPPLEMENT))
    assert report.hyde.run and "weak" in report.hyde.reason
    assert report.legs["hyde"] > 0
    assert candidates[0].chunk.source_uri.endswith("gil.md")
    assert "hyde" in candidates[0].ranks


def test_supplement_skips_hyde_on_a_strong_result_set(corpus) -> None:
    plan = Plan(variations=["global interpreter lock and threads"], hyde_passage="Sourdough starter feeding.")
    candidates, report = Retriever(corpus.store, corpus.embedder).search(plan, config(HydeMode.SUPPLEMENT))
    assert not report.hyde.run and "strong" in report.hyde.reason
    assert "hyde" not in report.legs
    assert candidates[0].chunk.source_uri.endswith("gil.md")


def test_fusion_mode_always_adds_the_hyde_leg(corpus) -> None:
    plan = Plan(variations=["how many hours of sun do tomato plants need"], hyde_passage=PASSAGE)
    _, report = Retriever(corpus.store, corpus.embedder).search(plan, config(HydeMode.FUSION))
    assert report.hyde.run and report.legs["hyde"] > 0


def test_missing_passage_is_written_by_the_llm_or_reported(corpus) -> None:
    plan = Plan(variations=["zxqv plorb wimble fandangle"])
    _, without_llm = Retriever(corpus.store, corpus.embedder).search(plan, config(HydeMode.SUPPLEMENT))
    assert not without_llm.hyde.run and "no HyDE passage" in without_llm.hyde.reason

    llm = ScriptedLLM(HydeDraft(passage=PASSAGE))
    _, with_llm = Retriever(corpus.store, corpus.embedder, llm=llm).search(plan, config(HydeMode.SUPPLEMENT))
    assert with_llm.hyde.run and with_llm.legs["hyde"] > 0


def test_supplement_skips_a_writer_measured_to_lower_the_score_and_says_so() -> None:
    weak = [hit("a", 0.2)]
    decision = decide_hyde(HydeMode.SUPPLEMENT, weak, 0.4, 2, "llama-cpp:smollm2-135m.gguf", ("SmolLM2",))
    assert not decision.run and "HYDE_WEAK_WRITERS (SmolLM2)" in decision.reason
    assert decide_hyde(HydeMode.SUPPLEMENT, weak, 0.4, 2, "ollama:qwen2.5:7b", ("SmolLM2",)).run
    assert decide_hyde(HydeMode.FUSION, weak, 0.4, 2, "llama-cpp:smollm2.gguf", ("SmolLM2",)).run


def test_supplement_with_a_weak_writer_searches_without_asking_it(corpus) -> None:
    plan = Plan(variations=["zxqv plorb wimble fandangle"])
    llm = ScriptedLLM(HydeDraft(passage=PASSAGE))
    llm.name = "llama-cpp:SmolLM2-135M-Instruct.gguf"
    weak_writer = replace(config(HydeMode.SUPPLEMENT), hyde_weak_writers=("SmolLM2",))
    candidates, report = Retriever(corpus.store, corpus.embedder, llm=llm).search(plan, weak_writer)
    assert not report.hyde.run and "HYDE_WEAK_WRITERS" in report.hyde.reason
    assert "hyde" not in report.legs and llm.prompts == []
    assert candidates, "the other legs still answer"


def test_weak_writers_come_from_a_comma_separated_setting(monkeypatch) -> None:
    monkeypatch.setenv("HINDSIGHT_HYDE_WEAK_WRITERS", "SmolLM2, tinyllama")
    assert Settings().retrieval.hyde_weak_writers == ["SmolLM2", "tinyllama"]
    config = RetrievalConfig.from_settings(Settings().retrieval, Strategy.PRECISE)
    assert config.hyde_weak_writers == ("SmolLM2", "tinyllama")
