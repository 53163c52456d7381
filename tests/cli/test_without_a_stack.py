"""The CLI where little is installed or running: keys in the gateway's image, a gateway that is down."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from shared.refusals import NOTHING_TO_ASK, NOTHING_TO_SEARCH
from testing.processes import free_port
from tests.conftest import REPO

# As in the gateway image: no scraper, no provisioning (each import of them fails).
WITHOUT_SCRAPER = (
    "import sys; sys.modules['services.scraper'] = None; sys.modules['provisioning'] = None; "
    "sys.argv = ['hindsight', *sys.argv[1:]]; from cli.main import main; main()"
)


def hindsight(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(PYTHONPATH=str(REPO), HINDSIGHT_DATA_DIR=str(data_dir), COLUMNS="200")
    command = [sys.executable, "-c", WITHOUT_SCRAPER, *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


def test_keys_are_created_listed_and_revoked_without_the_scraper_installed(tmp_path: Path) -> None:
    created = hindsight(tmp_path, "keys", "create", "--name", "laptop")
    assert created.returncode == 0, created.stderr
    key_id = created.stdout.split("created key ")[1].split()[0]
    assert "laptop" in hindsight(tmp_path, "keys", "list").stdout
    assert hindsight(tmp_path, "keys", "revoke", key_id).returncode == 0
    unknown = hindsight(tmp_path, "keys", "revoke", "nope")
    assert unknown.returncode == 1 and "no key with id nope" in unknown.stdout


def test_a_command_that_needs_the_gateway_says_it_is_unreachable_without_a_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    port = free_port()  # nothing listens there
    env.update(
        PYTHONPATH=str(REPO),
        HINDSIGHT_DATA_DIR=str(tmp_path),
        HINDSIGHT_GATEWAY_URL=f"http://127.0.0.1:{port}",
    )
    command = [sys.executable, "-m", "cli.main", "ask", "what is npm?"]
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "Hindsight isn't running — start it with `hindsight up`" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def mcp_without_a_gateway(data_dir: Path) -> StdioServerParameters:
    """``hindsight mcp`` pointed at a port where nothing listens."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        PYTHONPATH=str(REPO),
        HINDSIGHT_DATA_DIR=str(data_dir),
        HINDSIGHT_GATEWAY_URL=f"http://127.0.0.1:{free_port()}",
    )
    return StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "mcp"], env=env, cwd=str(REPO)
    )


def text_of(result: CallToolResult) -> str:
    return result.content[0].text if isinstance(result.content[0], TextContent) else ""


def test_mcp_tools_say_hindsight_is_not_running_as_the_cli_does(tmp_path: Path) -> None:
    """``hindsight mcp`` with no gateway: the official client lists the tools, and a call is a tool
    error with the CLI's sentence, not a crash of the server."""

    async def session() -> tuple[set[str], bool, str]:
        async with Client(mcp_without_a_gateway(tmp_path), read_timeout_seconds=60) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            called = await client.call_tool("ask", {"question": "What is my sourdough starter called?"})
            return names, called.is_error, text_of(called)

    names, is_error, text = asyncio.run(session())
    assert names == {"search", "ask", "get_passage", "list_sources"}
    assert is_error and text.endswith("Hindsight isn't running — start it with `hindsight up`")


def test_mcp_tools_refuse_an_empty_question_or_query_with_the_cli_s_sentence(tmp_path: Path) -> None:
    """An empty or blank question (or search query) is refused by the tool itself, before any gateway,
    with the sentence ``hindsight ask ""`` prints: not a validation dump, not "isn't running"."""

    async def session() -> tuple[dict[str, Any], list[tuple[bool, str]]]:
        async with Client(mcp_without_a_gateway(tmp_path), read_timeout_seconds=60) as client:
            schemas = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
            calls = [("ask", {"question": q}) for q in ("", "  \n")] + [
                ("search", {"query": q}) for q in ("", " ")
            ]
            return schemas, [
                (r.is_error, text_of(r)) for r in [await client.call_tool(n, a) for n, a in calls]
            ]

    schemas, said = asyncio.run(session())
    for tool, field in (("ask", "question"), ("search", "query")):  # a model still reads the rule
        assert schemas[tool][field]["minLength"] == 1 and schemas[tool][field]["pattern"] == r"\S"
    assert (
        said
        == [(True, f"Error executing tool ask: {NOTHING_TO_ASK}")] * 2
        + [(True, f"Error executing tool search: {NOTHING_TO_SEARCH}")] * 2
    )
    cli = hindsight(tmp_path, "ask", "")
    assert cli.returncode == 2 and " ".join(cli.stderr.split()) == NOTHING_TO_ASK
