"""Fixtures: a replay server on 127.0.0.1, settings pointing at it, a saved login."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from services.indexer.chunking import markdown_sections
from services.indexer.loaders import load_markdown
from services.indexer.pipeline import turn_question
from services.scraper.exporter import export_library
from services.scraper.session import interactive_login
from shared.contracts import ExportReport
from shared.settings import Settings
from testing.perplexity_replay import COOKIE, ReplayEntry, ReplayLibrary, ReplayServer, ReplayThread

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

Q_SOURCES = [
    {"name": "Surface codes explained", "url": "https://example.org/surface", "snippet": "Surface codes..."},
    {"name": "Threshold theorem", "url": "https://example.org/threshold", "snippet": "Below threshold..."},
]


def default_threads() -> list[ReplayThread]:
    """Seven threads covering both answer shapes, paging, pinning, awkward titles and a deleted one."""
    return [
        ReplayThread(
            uuid="11111111-1111-4111-8111-111111111111",
            slug="quantum-error-correction-basics-AbCdEfGhIjKlMnOpQrStUv",
            title="Quantum error correction basics",
            space="Physics",
            pinned=True,
            last_query_datetime="2025-07-26T10:00:00.000000",
            entries=[
                ReplayEntry(
                    "What is quantum error correction?",
                    "It protects qubits [1] using codes [2].",
                    Q_SOURCES,
                    created="2025-07-26T09:00:00.000000",
                ),
                ReplayEntry(
                    "How does the surface code work?",
                    "A 2D lattice of qubits [1].",
                    Q_SOURCES[:1],
                    created="2025-07-26T09:10:00.000000",
                ),
                ReplayEntry(
                    "What is the threshold?",
                    "About one percent [2], per the theorem [1].",
                    Q_SOURCES[::-1],
                    created="2025-07-26T09:20:00.000000",
                ),
            ],
        ),
        ReplayThread(
            uuid="22222222-2222-4222-8222-222222222222",
            slug="rust-borrow-checker-BbCdEfGhIjKlMnOpQrStUv",
            title="Rust borrow checker",
            plain_only=True,
            last_query_datetime="2025-07-25T10:00:00.000000",
            entries=[
                ReplayEntry(
                    "Why does the borrow checker reject this?",
                    "Two mutable borrows overlap [1].",
                    [
                        {
                            "name": "The Rust Book",
                            "url": "https://doc.rust-lang.org/book/",
                            "snippet": "References and borrowing",
                        }
                    ],
                )
            ],
        ),
        ReplayThread(
            uuid="33333333-3333-4333-8333-333333333333",
            slug="deleted-thread-CbCdEfGhIjKlMnOpQrStUv",
            title="Deleted thread",
            gone="ENTRY_DELETED",
            last_query_datetime="2025-07-24T10:00:00.000000",
            entries=[ReplayEntry("gone?", "yes")],
        ),
        ReplayThread(
            uuid="44444444-4444-4444-8444-444444444444",
            slug="sourdough-hydration-DbCdEfGhIjKlMnOpQrStUv",
            title='Sourdough: hydration 75%? <best> / "ratio"',
            space="Cooking/Baking",
            last_query_datetime="2025-07-23T10:00:00.000000",
            entries=[
                ReplayEntry(
                    "What hydration for sourdough?",
                    "Around 75% works [1].",
                    [{"title": "Bread blog", "link": "https://example.com/bread"}],
                )
            ],
        ),
        ReplayThread(
            uuid="55555555-5555-4555-8555-555555555555",
            slug="same-title-EbCdEfGhIjKlMnOpQrStUv",
            title="Same title",
            last_query_datetime="2025-07-22T10:00:00.000000",
            entries=[ReplayEntry("First of two", "Answer one.")],
        ),
        ReplayThread(
            uuid="66666666-6666-4666-8666-666666666666",
            slug="same-title-FbCdEfGhIjKlMnOpQrStUv",
            title="Same title",
            last_query_datetime="2025-07-21T10:00:00.000000",
            entries=[ReplayEntry("Second of two", "Answer two.")],
        ),
        ReplayThread(
            uuid="77777777-7777-4777-8777-777777777777",
            slug="con-GbCdEfGhIjKlMnOpQrStUv",
            title="CON",
            pinned=True,
            last_query_datetime="2025-07-20T10:00:00.000000",
            entries=[ReplayEntry("Reserved names on Windows?", "CON, PRN, AUX and NUL are reserved.")],
        ),
    ]


@pytest.fixture
def library() -> ReplayLibrary:
    return ReplayLibrary(threads=default_threads(), total_threads=99)


@pytest.fixture
def replay(library: ReplayLibrary) -> Iterator[ReplayServer]:
    with ReplayServer(library) as server:
        yield server


def write_state(path: Path, token: str) -> None:
    """A Playwright storage state holding the login cookie for 127.0.0.1."""
    cookie = {
        "name": COOKIE,
        "value": token,
        "domain": "127.0.0.1",
        "path": "/",
        "expires": -1,
        "httpOnly": True,
        "secure": True,
        "sameSite": "Lax",
    }
    path.write_text(json.dumps({"cookies": [cookie], "origins": []}, indent=2))


@pytest.fixture
def settings(tmp_path: Path, replay: ReplayServer) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        perplexity_base_url=replay.base_url,
        perplexity_state=tmp_path / "state.json",
        export_dir=tmp_path / "exports",
        chromium_path=Path(CHROMIUM),
        scrape_headless=True,
        scrape_list_page_size=3,
        scrape_page_delay_s=0.0,
        scrape_page_jitter_s=0.0,
        scrape_thread_delay_s=0.0,
        scrape_thread_jitter_s=0.0,
        scrape_max_attempts=4,
        scrape_backoff_base_s=0.01,
        scrape_backoff_max_s=0.05,
        scrape_timeout_s=10.0,
        scrape_login_timeout_s=10.0,
        scrape_challenge_wait_s=2.0,
    )


@pytest.fixture
def logged_in(settings: Settings) -> Settings:
    write_state(settings.perplexity_state_path, "token-ok")
    return settings


def export_with(settings: Settings, **options: Any) -> ExportReport:
    """The library exported as the scrape job does: ``settings``' scraping group, saved login and
    export folder."""
    return export_library(settings.scraping, settings.perplexity_state_path, settings.export_root, **options)


def login_with(settings: Settings, on_waiting: Callable[[Page], None], **options: Any) -> dict[str, Any]:
    """``interactive_login`` with ``settings``' scraping group, saving the login where they say."""
    return interactive_login(settings.scraping, settings.perplexity_state_path, on_waiting, **options)


def front_matter(path: Path) -> dict[str, str]:
    head = path.read_text(encoding="utf-8").split("---\n")[1]
    return {key: json.loads(value) for key, value in (line.split(": ", 1) for line in head.splitlines())}


def section(markdown: str, question: str) -> str:
    """The ``## question`` section of an exported thread: its answer and its own numbered sources."""
    return markdown.split(f"## {question}\n", 1)[1].split("\n## ", 1)[0]


def data_export(path: Path) -> Path:
    """The bulk data-request JSON with the fields public converters read."""
    path.write_text(
        json.dumps(
            {
                "conversations": [
                    {
                        "context_title": "Tea: green vs black?",
                        "created_at": "2025-05-01T08:00:00Z",
                        "mode": "copilot",
                        "collection_uuid": None,
                        "entries": [
                            {
                                "query": "Green or black tea for caffeine?",
                                "answer": "Black tea has more [1].",
                                "mode": "copilot",
                                "created_at": "2025-05-01T08:00:00Z",
                                "query_status": "COMPLETED",
                            },
                            {
                                "query": "And matcha?",
                                "answer": "Matcha has the most.",
                                "mode": "copilot",
                                "created_at": "2025-05-02T08:00:00Z",
                                "query_status": "COMPLETED",
                            },
                        ],
                    },
                    {
                        "context_title": "Untitled thoughts",
                        "created_at": "2025-06-01T08:00:00Z",
                        "mode": "concise",
                        "collection_uuid": "c-1",
                        "entries": [
                            {
                                "query": "Is it raining?",
                                "answer": "No.",
                                "mode": "concise",
                                "created_at": "2025-06-01T08:00:00Z",
                                "query_status": "COMPLETED",
                            }
                        ],
                    },
                ]
            }
        )
    )
    return path


def turn_question_of(text: str, phrase: str) -> str | None:
    """The turn question the indexer stores with the chunk of a written thread ``text`` that holds
    ``phrase`` (its loader, its sections, its rule)."""
    loaded = load_markdown(text, Path("thread.md"))
    offset = loaded.text.index(phrase)
    (section,) = [s for s in markdown_sections(loaded.text) if s.start <= offset < s.end]
    return turn_question(loaded.metadata, section.heading_path)


@pytest.fixture
def question_of_passage() -> Callable[[str, str], str | None]:
    """:func:`turn_question_of`, for tests that read a written thread as the indexer does."""
    return turn_question_of
