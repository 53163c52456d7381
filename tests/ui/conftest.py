"""The web page's tests: ``hindsight up`` on its own ports with the samples and an exported Perplexity
thread indexed, a gateway with no worker behind it, and Debian's Chromium through Playwright.

Screenshots go to ``test-artifacts/ui/`` (git-ignored), named after what they show.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from shared.api_keys import KeyFile
from testing.processes import free_port, wait_for
from tests.conftest import run_hindsight
from tests.gateway.conftest import REPO, hindsight_env, start_gateway

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ARTEFACTS = REPO / "test-artifacts" / "ui"
WIDTHS = {"desktop": 1280, "phone": 390}
THREAD = """---
title: "Proofing sourdough in the fridge"
uuid: "7f1c"
slug: "proofing-sourdough-in-the-fridge-7f1c"
space: "Baking"
url: "https://www.perplexity.ai/search/proofing-sourdough-in-the-fridge-7f1c"
created: "2025-03-02T09:00:00Z"
source: "perplexity"
---

# Proofing sourdough in the fridge

## How long can sourdough dough proof in the fridge?

A cold retard of 12 to 48 hours in the fridge is common; colder dough ferments more slowly, so a
longer retard gives a more sour loaf with a blistered crust.
"""


@dataclass
class Stack:
    url: str
    key: str
    env: dict[str, str]
    library: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-API-Key": self.key}, timeout=60)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """``hindsight up`` with the samples, an exported thread and a broken PDF in its library; the
    samples' notes and the thread are indexed, the folder with the broken PDF is left to the page."""
    data_dir = tmp_path_factory.mktemp("stack")
    library = tmp_path_factory.mktemp("library")
    shutil.copytree(REPO / "samples", library / "samples")
    (library / "perplexity" / "Baking").mkdir(parents=True)
    (library / "perplexity" / "Baking" / "Proofing sourdough in the fridge (7f1c).md").write_text(THREAD)
    (library / "broken").mkdir()
    (library / "broken" / "scan.pdf").write_bytes(b"%PDF-1.4 this is not a PDF body")
    port = free_port()
    # Every test drives the page with the same key, faster than a person: lift the per-key rate limit.
    env = hindsight_env(
        data_dir,
        f"redis://127.0.0.1:{free_port()}/0",
        port,
        COLUMNS="200",
        HINDSIGHT_RATE_LIMIT_PER_MINUTE="6000",
        HINDSIGHT_READ_RATE_LIMIT_PER_MINUTE="6000",
        HINDSIGHT_ROOTS=str(library),  # the page may index any folder of the library
    )
    try:
        run_hindsight(env, "up")
        key = (data_dir / "cli.key").read_text().strip()
        running = Stack(f"http://127.0.0.1:{port}", key, env, library)
        run_hindsight(env, "index", str(library / "samples" / "notes"))
        run_hindsight(env, "index", str(library / "perplexity"))
        yield running
    finally:
        subprocess.run(
            [sys.executable, "-m", "cli.main", "down"], cwd=REPO, env=env, capture_output=True, timeout=60
        )


@contextmanager
def gateway_alone(redis_url: str, data_dir: Path, **settings: str) -> Iterator[Stack]:
    """A gateway (and its Redis) with no worker at all, and a valid key."""
    port = free_port()
    env = hindsight_env(data_dir, redis_url, port, **settings)
    process = start_gateway(env, data_dir / "gateway.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/metrics").status_code == 200, 30, "the gateway")
        key = KeyFile(data_dir / "api_keys.json").create("page")[1]
        yield Stack(url, key, env, data_dir)
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def workerless_gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """No worker, and questions refused while a stage has none (the default)."""
    with gateway_alone(redis_url, tmp_path_factory.mktemp("workerless")) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def queueing_gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """No worker, and questions queued anyway (as where workers start on demand)."""
    data_dir = tmp_path_factory.mktemp("queueing")
    with gateway_alone(redis_url, data_dir, HINDSIGHT_REFUSE_WITHOUT_WORKERS="false") as gateway:
        yield gateway


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    arguments = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), headless=True, args=arguments
        )
        yield chromium
        chromium.close()


def open_page(browser: Browser, url: str, width: int, dark: bool = False) -> Page:
    """A fresh browser context (its own localStorage) at ``width`` px, on ``url``."""
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme="dark" if dark else "light"
    )
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url.split("/#")[0])
    page = context.new_page()
    page.goto(url)
    return page


def screenshot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTEFACTS / f"{name}.png"), full_page=True)
