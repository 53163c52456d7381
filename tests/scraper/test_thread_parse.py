"""Both answer shapes (docs/perplexity.md, "Thread entries"), parsed from entries the replay server builds."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from services.scraper.models import ThreadSummary
from services.scraper.thread_parse import build_thread, parse_timestamp, parse_turn
from testing.perplexity_replay import ReplayEntry, ReplayThread

SOURCES = [{"name": "A", "url": "https://a.example"}, {"title": "B", "link": "https://b.example"}]


def _thread() -> ReplayThread:
    return ReplayThread(
        uuid="t-1", slug="t-AAAAAAAAAA", title="T", entries=[ReplayEntry("Q?", "Ans [1][2].", SOURCES)]
    )


def test_schematized_entry_uses_ask_text_once_not_the_repeated_sections() -> None:
    thread = _thread()
    entry = {**thread.entries[0].plain(thread), "blocks": thread.entries[0].blocks(), "text": ""}

    turn = parse_turn(entry)

    assert turn.answer == "Ans [1][2]."
    assert [(s.name, s.url) for s in turn.sources] == [("A", "https://a.example"), ("B", "https://b.example")]


def test_sections_are_joined_in_order_when_ask_text_is_missing() -> None:
    blocks = [
        {"intended_usage": "ask_text_1_markdown", "markdown_block": {"answer": "second"}},
        {"intended_usage": "ask_text_0_markdown", "markdown_block": {"answer": "first"}},
        {"intended_usage": "ask_text_2_markdown", "markdown_block": {"answer": "first"}},
    ]

    assert parse_turn({"query_str": "q", "blocks": blocks}).answer == "first\n\nsecond"


def test_plain_entry_reads_the_double_encoded_final_step() -> None:
    thread = _thread()

    turn = parse_turn(thread.entries[0].plain(thread))

    assert (turn.question, turn.answer) == ("Q?", "Ans [1][2].")
    assert [s.url for s in turn.sources] == ["https://a.example", "https://b.example"]


def test_final_step_without_answer_key_falls_back_to_the_longest_string() -> None:
    payload = {"summary": "short", "report": "x" * 40}
    steps = [{"step_type": "FINAL", "content": {"answer": json.dumps(payload)}}]

    assert parse_turn({"query_str": "q", "text": json.dumps(steps)}).answer == "x" * 40


def test_simplified_variant_with_plain_text_and_side_answer_is_tolerated() -> None:
    entry = {
        "query_str": "q",
        "text": "plain answer",
        "answer": json.dumps({"answer": "side answer"}),
        "web_results": [{"name": "S", "url": "https://s.example"}],
    }

    turn = parse_turn(entry)

    assert turn.answer == "side answer" and turn.sources[0].url == "https://s.example"


def test_build_thread_dedupes_entries_orders_them_and_fills_metadata() -> None:
    thread = ReplayThread(
        uuid="t-2",
        slug="t-BBBBBBBBBB",
        title="Title",
        space="Space",
        entries=[
            ReplayEntry("first", "1", created="2025-01-01T00:00:00.000000"),
            ReplayEntry("second", "2", created="2025-01-02T00:00:00.000000"),
        ],
    )
    first, second = (e.plain(thread) for e in thread.entries)
    summary = ThreadSummary(
        uuid="t-2", slug="t-BBBBBBBBBB", title="Listed", last_query_datetime="2025-01-02T00:00:00"
    )

    built = build_thread(
        [second, first, second], {"created_at": "2025-01-01T00:00:00"}, summary, "https://x.test/"
    )

    assert [t.question for t in built.turns] == ["first", "second"]
    assert (built.title, built.space, built.url) == ("Title", "Space", "https://x.test/search/t-BBBBBBBBBB")
    assert built.created == datetime(2025, 1, 1, tzinfo=UTC)


def test_timestamps_accept_nanoseconds_zones_and_epoch_microseconds() -> None:
    assert parse_timestamp("2026-03-22T20:29:59.170506665Z") == datetime(2026, 3, 22, 20, 29, 59, 170506, UTC)
    assert parse_timestamp(1_700_000_000_000_000) == datetime.fromtimestamp(1_700_000_000, UTC)
    assert parse_timestamp("not a date") is None
