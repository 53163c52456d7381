"""What the CLI says when something is wrong: nothing running, a wrong key, a refused request, a stage
without a worker, empty input; and ``status`` as a table. Real processes: a redis-server and the
gateway, with no worker behind it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.api_keys import KeyFile
from shared.refusals import detail_sentence
from testing.processes import free_port, wait_for
from tests.conftest import REPO
from tests.gateway.conftest import Gateway, hindsight_env, start_gateway

pytestmark = pytest.mark.integration
NOT_RUNNING = "Hindsight isn't running — start it with `hindsight up`"
NO_WORKER = (
    "no live worker for the retrieve, rerank, map and reduce stages "
    "(the retriever, reranker, mapper and reducer workers)"
)


def hindsight(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cli.main", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=90)


def said(result: subprocess.CompletedProcess[str]) -> str:
    """Everything the command printed, without the line breaks of a narrow terminal."""
    return " ".join((result.stdout + result.stderr).split())


@pytest.fixture(scope="module")
def lone_gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway with its key file and Redis, and no worker at all."""
    data_dir = tmp_path_factory.mktemp("data")
    port = free_port()
    env = hindsight_env(data_dir, redis_url, port, COLUMNS="400")
    process = start_gateway(env, data_dir / "gateway.log")
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: httpx.get(f"{url}/metrics").status_code == 200, 30, "the gateway")
    env["HINDSIGHT_API_KEY"] = KeyFile(data_dir / "api_keys.json").create("cli-test")[1]
    yield Gateway(url, env, data_dir)
    process.terminate()
    process.wait(10)


def test_every_command_that_needs_the_gateway_says_hindsight_is_not_running(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        PYTHONPATH=str(REPO), COLUMNS="200", HINDSIGHT_DATA_DIR=str(tmp_path),
        HINDSIGHT_GATEWAY_URL=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    for args in (["ask", "what is npm?"], ["index", str(tmp_path)], ["search", "rye flour"]):
        result = hindsight(env, *args)
        assert result.returncode == 1, args
        assert NOT_RUNNING in said(result), args
        assert "Traceback" not in said(result), args


def test_up_with_a_data_folder_that_has_no_models_refuses_before_starting_anything(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(PYTHONPATH=str(REPO), COLUMNS="300", HINDSIGHT_DATA_DIR=str(tmp_path / "data"))
    result = hindsight(env, "up")
    assert result.returncode == 1
    assert f"no embedder at {tmp_path / 'data' / 'models' / 'all-MiniLM-L6-v2'}" in said(result)
    assert "run `hindsight models prepare` with the same HINDSIGHT_DATA_DIR" in said(result)
    assert "Traceback" not in said(result) and "started" not in said(result)
    assert not (tmp_path / "data" / "run").exists(), "nothing was started"


def test_an_import_without_hindsight_running_says_what_to_run_to_index_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        PYTHONPATH=str(REPO), COLUMNS="300", HINDSIGHT_DATA_DIR=str(tmp_path / "data"),
        HINDSIGHT_GATEWAY_URL=f"http://127.0.0.1:{free_port()}",
    )  # fmt: skip
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / "How do I feed a starter.md").write_text(
        "# How do I feed a starter?\n\nDaily, flour and water.\n"
    )
    result = hindsight(env, "import", "perplexity-markdown", str(downloads))
    assert result.returncode == 0, said(result)
    exports = tmp_path / "data" / "exports"
    assert f"start Hindsight with `hindsight up`, then run `hindsight index {exports}`" in said(result)


def test_empty_search_and_empty_question_are_refused_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HINDSIGHT_DATA_DIR": str(tmp_path)}
    for args, message in ((["search", ""], "nothing to search for"), (["ask", "  "], "nothing to ask")):
        result = hindsight(env, *args)
        assert result.returncode == 2 and message in said(result)
        assert "Traceback" not in said(result) and "pydantic" not in said(result)


def test_a_wrong_key_is_one_sentence_with_the_fix(lone_gateway: Gateway) -> None:
    result = hindsight({**lone_gateway.env, "HINDSIGHT_API_KEY": "hs_not-a-key"}, "search", "rye flour")
    assert result.returncode == 1
    assert "refused the API key" in said(result) and "HINDSIGHT_API_KEY" in said(result)
    assert "Traceback" not in said(result)


def test_a_question_without_a_live_worker_is_refused_naming_the_stage(lone_gateway: Gateway) -> None:
    result = hindsight(lone_gateway.env, "ask", "What is my starter called?")
    assert result.returncode == 1
    text = said(result)
    assert NO_WORKER in text
    assert "`hindsight up`" in text and "Traceback" not in text


def test_status_is_a_table_with_the_address_the_gateway_and_the_answer_mode(lone_gateway: Gateway) -> None:
    result = hindsight(lone_gateway.env, "status")
    assert result.returncode == 0, result.stdout + result.stderr
    text = said(result)
    assert "web page" in text and f"{lone_gateway.url}/" in text
    assert "degraded — no live worker on index, retrieve, rerank, map, reduce" in text
    assert "answers" in text and "extractive: quotes the best passages" in text
    assert "no reranker worker has reported yet" in text
    assert "documents │ 0" in text and "none yet (`hindsight index FOLDER`)" in text
    assert "{" not in text, "no Python dict"


def test_validation_errors_become_one_sentence_naming_the_field() -> None:
    detail = [{"loc": ["body", "limit"], "msg": "Input should be less than or equal to 100", "type": "x"}]
    assert (
        detail_sentence(detail) == "the request was refused: limit: Input should be less than or equal to 100"
    )
    assert detail_sentence("the question is empty") == "the question is empty"


def test_open_gives_the_signed_in_page_when_no_browser_can_show_it(lone_gateway: Gateway) -> None:
    """The page to open is a private file that forwards to the page with the key (the key itself is
    not printed again: ``tests/security/test_keys.py``)."""
    env = {k: v for k, v in lone_gateway.env.items() if k not in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY")}
    result = hindsight({**env, "PATH": str(Path(sys.executable).parent)}, "open")
    assert result.returncode == 0
    page = lone_gateway.data_dir / "run" / "open.html"
    assert f"no browser found; open {page.as_uri()}" in said(result)
    assert f"{lone_gateway.url}/#key={env['HINDSIGHT_API_KEY']}" in page.read_text()
