"""A question answered end to end: real Redis, real Celery workers as processes, real HTTP.

The fixture corpus holds one planted fact; the answer must cite exactly that passage, with a span
that matches the file's text character for character.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.actions.ask import citation_line
from cli.client import GatewayClient
from cli.local_key import client_key, ensure_local_key
from cli.local_stack import LocalStack, wait_until
from shared.contracts import Answer
from shared.index_jobs import register_root
from shared.settings import Settings
from testing.processes import free_port
from tests.conftest import REPO, require_embedder

CORPUS = REPO / "tests" / "fixtures" / "corpus"
PLANTED_FILE = "Project Nightingale (nightingale-kickoff).md"
PLANTED_FACT = "amber-falcon-42"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's samples/, the demo's library."""
    folder = tmp_path_factory.mktemp("samples")
    shutil.copytree(REPO / "samples", folder, dirs_exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def stack(
    redis_url: str, samples: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[GatewayClient, Path]]:
    """Workers for every queue and the gateway, started the way ``hindsight up`` starts them, with the
    test corpus and the samples as roots."""
    data_dir = tmp_path_factory.mktemp("data")
    corpus = tmp_path_factory.mktemp("corpus")
    shutil.copytree(CORPUS, corpus, dirs_exist_ok=True)
    port = free_port()
    settings = Settings(
        data_dir=data_dir,
        models_dir=require_embedder(),
        redis_url=redis_url,
        gateway_port=port,
        gateway_url=f"http://127.0.0.1:{port}",
    )
    ensure_local_key(settings)
    for root in (corpus, samples):
        register_root(settings.roots_file, root)  # as `hindsight index` does
    local = LocalStack(settings)
    local.up()
    client = GatewayClient(settings.gateway.gateway_url, client_key(settings))

    def all_queues_served() -> bool:
        try:
            return client.health()["status"] == "ok"
        except Exception:
            return False

    try:
        wait_until(all_queues_served, 90, "workers and gateway")
        yield client, corpus
    finally:
        local.down()


def index_and_wait(client: GatewayClient, root: Path) -> None:
    job_id = client.index(str(root))
    events = list(client.index_events(job_id))
    assert events[-1].stage == "index" and events[-1].status == "done"


def test_answer_cites_the_one_passage_holding_the_planted_fact(stack: tuple[GatewayClient, Path]) -> None:
    client, corpus = stack
    index_and_wait(client, corpus)

    question_id = client.ask("What is the launch code for Project Nightingale?")
    events = list(client.question_events(question_id))

    stages = [e.stage for e in events if e.status != "started"]
    assert stages[-1] == "answer" and events[-1].status == "done"
    for stage in ("plan", "search", "rerank", "map", "reduce"):
        assert stage in stages, f"no {stage} event in {stages}"
    answer = Answer.model_validate(events[-1].data["answer"])
    assert answer == client.answer(question_id)

    planted = [c for c in answer.citations if PLANTED_FACT in c.quote]
    assert len(planted) == 1, answer.markdown
    citation = planted[0]
    assert Path(citation.source_uri).name == PLANTED_FILE
    assert f"[{citation.number}]" in answer.markdown
    assert citation.verified
    text = (corpus / PLANTED_FILE).read_text()  # spans count in the file, front matter included
    assert text[citation.char_start : citation.char_end] == citation.quote
    assert citation.line == text.count("\n", 0, citation.char_start) + 1


def asked(client: GatewayClient, question: str) -> Answer:
    events = list(client.question_events(client.ask(question)))
    assert events[-1].stage == "answer" and events[-1].status == "done", events[-1]
    return Answer.model_validate(events[-1].data["answer"])


def test_the_demo_questions_are_answered_in_whole_sentences_cited_at_path_and_line(
    stack: tuple[GatewayClient, Path], samples: Path
) -> None:
    client, _ = stack
    index_and_wait(client, samples)
    feeding = "It lives in the fridge and gets fed every Sunday with equal weights of rye flour and water."

    both = asked(client, "What is my sourdough starter called and how often is it fed?")
    said = " ".join(both.markdown.split())
    assert "My starter is called Clint." in said and feeding.rstrip(".") in said, both.markdown

    rephrased = asked(client, "How often is the starter fed, and with what flour?")
    assert feeding.rstrip(".") in " ".join(rephrased.markdown.split()), rephrased.markdown

    for citation in both.citations + rephrased.citations:
        text = Path(citation.source_uri).read_text()
        assert citation.verified and text[citation.char_start : citation.char_end] == citation.quote
        assert citation.line == text.count("\n", 0, citation.char_start) + 1
        assert f"{citation.source_uri}:{citation.line}" in citation_line(citation)


def test_reindexing_an_unchanged_folder_embeds_nothing(stack: tuple[GatewayClient, Path]) -> None:
    client, corpus = stack
    index_and_wait(client, corpus)
    job_id = client.index(str(corpus))
    list(client.index_events(job_id))
    report = client.index_report(job_id)
    assert report is not None
    assert (report.new, report.changed, report.chunks) == (0, 0, 0)
    assert report.unchanged == len([p for p in corpus.rglob("*") if p.is_file()])
