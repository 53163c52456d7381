"""Nothing of a thread is mangled, merged or dropped on its way to Markdown (issue 29, defects 1-6).

Shapes follow public evidence: answers with fenced code and ``##`` headings as Perplexity writes
them (official exports in public repositories, e.g. a "Copy-Paste Ready" answer with ``###`` steps
and ``typescript`` fences); the 2026 per-thread Markdown with ``[^n]`` footnotes, the
``<div align="center">⁂</div>`` divider, the hidden ``display:none`` span, attached-file footnotes
(``[^1]: image.jpg``, ``[^5]: paste.txt``) and escaped URLs (``\\&``); media items as documented by
Yiksing/pplx-tools (``media_items[]`` with ``medium``, ``image``, ``name``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from services.indexer.chunking import markdown_sections
from services.scraper.checkpoint import CHECKPOINT_NAME
from services.scraper.imports import Imported, threads_from_markdown_dir, write_threads
from services.scraper.library import turn_questions
from services.scraper.markdown import render_thread
from services.scraper.models import Thread, ThreadSummary, Turn
from services.scraper.thread_parse import build_thread, normalise_answer
from services.scraper.writer import ThreadWriter, WriteOutcome
from shared.markdown_source import split_front_matter

MAX_BYTES = 1_000_000
PHONE_CODE = "\n".join(
    [
        "```python",
        "import re",
        'PHONE = re.compile(r"\\(\\d{3}\\) \\d{3}-\\d{4}")',
        "## not a heading: a comment",
        "```",
    ]
)


def test_latex_is_rewritten_in_prose_and_never_inside_code() -> None:
    answer = (
        f"Match US numbers:\n\n{PHONE_CODE}\n\n"
        "The escaped \\( and \\) match literal brackets; `\\(` in a span stays too. "
        "The count grows as \\( n^2 \\), or \\[ T(n) = O(n^2) \\]. See [the docs](pplx://action/docs)."
    )

    written = normalise_answer(answer)

    assert PHONE_CODE in written
    assert "The escaped \\( and \\) match literal brackets; `\\(` in a span stays too." in written
    assert "grows as $n^2$, or $$T(n) = O(n^2)$$. See the docs." in written


def two_turn_thread() -> Thread:
    first = (
        "## Sodium-ion batteries for grid storage\n\nThey are cheap.\n\n"
        f"# Installation Steps\n\n{PHONE_CODE}\n\nUse the pattern above.\n\n"
        "<details>\n## Raw HTML details\n</details>\n\nAfter the details."
    )
    return Thread(
        uuid="u-1",
        title="Research sodium-ion",
        turns=[
            Turn(question="Research sodium-ion batteries for grid storage", answer=first),
            Turn(
                question="And how long do they last?\nIn years, please.",
                answer="### Lifetime\n\nAbout 15 years.",
            ),
        ],
    )


def test_every_passage_of_a_thread_names_the_question_of_its_turn_whatever_headings_the_answer_has(
    question_of_passage: Callable[[str, str], str | None],
) -> None:
    text = render_thread(two_turn_thread())

    def question_at(phrase: str) -> str | None:
        return question_of_passage(text, phrase)

    assert question_at("They are cheap.") == "Research sodium-ion batteries for grid storage"
    assert question_at("Use the pattern above.") == "Research sodium-ion batteries for grid storage"
    assert question_at("After the details.") == "Research sodium-ion batteries for grid storage"
    assert question_at("About 15 years.") == "And how long do they last? In years, please."
    assert PHONE_CODE in text


def test_a_note_that_is_not_an_exported_thread_has_no_turn_question_whatever_its_headings(
    question_of_passage: Callable[[str, str], str | None],
) -> None:
    note = "---\ntitle: Kefir\n---\n# Kefir\n\n## How do I feed it?\n\nMilk, once a day.\n"
    assert question_of_passage(note, "Milk, once a day.") is None
    thread = note.replace("title: Kefir", 'title: "Kefir"\nsource: "perplexity"')
    assert question_of_passage(thread, "Milk, once a day.") == "How do I feed it?"


LOGO = (
    '<img src="https://r2cdn.perplexity.ai/pplx-full-logo-primary-dark%402x.png" '
    'style="height:64px;margin-right:32px"/>'
)
OFFICIAL_2026 = f"""{LOGO}

# Compare these two heat pump quotes
the first is 9 kW, the second 12 kW
which one fits a 120 m² house?

The 9 kW unit fits most 120 m² houses.[^1][^3] Your attached quote lists a buffer tank.[^2]

***

## Sizing

Size from the heat loss, not the floor area.[^3]
<span style="display:none">[^4]</span>

<div align="center">⁂</div>

[^1]: https://www.energysavingtrust.org.uk/advice/air-source-heat-pumps/?vt=4\\&node_id=12

[^2]: paste.txt

[^3]: https://www.example.org/heat-loss

[^4]: image.jpg
"""


def test_the_2026_official_markdown_is_read_whole(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "Heat pump quotes.md").write_text(OFFICIAL_2026)

    (thread,) = threads_from_markdown_dir(folder, MAX_BYTES).threads

    (turn,) = thread.turns
    assert turn.question == (
        "Compare these two heat pump quotes\n"
        "the first is 9 kW, the second 12 kW\n"
        "which one fits a 120 m² house?"
    )
    assert turn.answer.startswith("The 9 kW unit fits most 120 m² houses.[1][3] Your attached quote lists")
    assert "Size from the heat loss, not the floor area.[3]" in turn.answer
    assert "⁂" not in turn.answer and "display:none" not in turn.answer and "[^" not in turn.answer
    assert [(s.name, s.url) for s in turn.sources] == [
        (
            "https://www.energysavingtrust.org.uk/advice/air-source-heat-pumps/?vt=4&node_id=12",
            "https://www.energysavingtrust.org.uk/advice/air-source-heat-pumps/?vt=4&node_id=12",
        ),
        ("paste.txt", ""),
        ("https://www.example.org/heat-loss", "https://www.example.org/heat-loss"),
        ("image.jpg", ""),
    ]
    assert [(a.kind, a.caption) for a in turn.attachments] == [("file", "paste.txt"), ("image", "image.jpg")]
    written = render_thread(thread)
    assert "#### Sizing" in written and "- image: image.jpg" in written


def official_turn(query: str, answer: str) -> str:
    return f'# {query}\n\n{answer}[^1]\n\n<div align="center">⁂</div>\n\n[^1]: https://example.com/{len(answer)}\n'


def test_browser_numbered_downloads_are_parts_only_when_their_content_overlaps(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "Best laptop for travel.md").write_text(
        official_turn("Best laptop for travel?", "A light one.")
    )
    (folder / "Best laptop for travel (1).md").write_text(
        official_turn("Best laptop for travel under 1 kg?", "The 980 g one.")
    )
    first, second = official_turn("Long one?", "Part one."), official_turn("And then?", "Part two.")
    (folder / "Long.md").write_text(first + "\n---\n\n" + second)
    (folder / "Long (1).md").write_text(second + "\n---\n\n" + official_turn("Finally?", "Part three."))

    imported = threads_from_markdown_dir(folder, MAX_BYTES)
    report = write_threads(imported, tmp_path / "exports")

    laptops = sorted(t.turns[0].question for t in imported.threads if t.title == "Best laptop for travel")
    assert laptops == ["Best laptop for travel under 1 kg?", "Best laptop for travel?"]
    (long,) = (t for t in imported.threads if t.title == "Long")
    assert [t.question for t in long.turns] == ["Long one?", "And then?", "Finally?"]
    assert report.new == 3 and len(list((tmp_path / "exports").rglob("*.md"))) == 3


def thread(uuid: str, question: str, answer: str, created: datetime) -> Thread:
    return Thread(uuid=uuid, title=question, created=created, turns=[Turn(question=question, answer=answer)])


def test_a_repeated_prompt_a_year_apart_is_its_own_thread_and_a_reimport_of_a_scraped_one_is_not(
    tmp_path: Path,
) -> None:
    export_dir = tmp_path / "exports"
    scraped = thread(
        "real-uuid",
        "How do heat pumps work?",
        "They move heat [1] with a compressor.",
        datetime(2025, 3, 1, tzinfo=UTC),
    )
    writer = ThreadWriter(export_dir)
    writer.write(scraped, "listing")
    writer.close()
    a_year_before = thread(
        "import-1",
        "How do heat pumps work?",
        "A refrigerant cycle pumps heat uphill.",
        datetime(2024, 3, 1, tzinfo=UTC),
    )
    same_as_scraped = thread(
        "import-2",
        "How do heat pumps work?",
        "They move heat with a compressor.",
        datetime(2025, 3, 1, 2, tzinfo=UTC),
    )

    report = write_threads(Imported(threads=[a_year_before, same_as_scraped]), export_dir)

    assert (report.new, report.unchanged) == (1, 1)
    assert report.kept_once == [
        "'How do heat pumps work?' is already there as General/How do heat pumps work_ (real-uuid).md"
    ]
    answers = sorted(p.read_text().count("refrigerant cycle") for p in export_dir.rglob("*.md"))
    assert answers == [0, 1] and len(answers) == 2


def test_images_media_and_attachments_are_kept_as_links_and_subagent_stubs_are_not_turns() -> None:
    entry = {
        "uuid": "e1",
        "query_str": "Show me a heat pump diagram",
        "blocks": [
            {"intended_usage": "ask_text", "markdown_block": {"answer": "Here is one [1]."}},
            {
                "intended_usage": "ask_text_0_images",
                "inline_entity_block": {
                    "media_block": {
                        "media_items": [
                            {
                                "medium": "image",
                                "image": "https://img.example/hp.png",
                                "url": "https://src.example/hp",
                                "name": "Heat pump cycle diagram",
                            }
                        ]
                    }
                },
            },
        ],
        "attachments": ["https://files.example/uploads/quote.pdf"],
        "entry_created_datetime": "2025-01-01T00:00:00+00:00",
    }
    stub = {
        "uuid": "e2",
        "query_str": "",
        "blocks": [{"intended_usage": "subagent_result", "subagent_block": {}}],
        "entry_created_datetime": "2025-01-01T00:01:00+00:00",
    }

    built = build_thread(
        [entry, stub], {"title": "Diagram"}, ThreadSummary(uuid="t1"), "https://www.perplexity.ai"
    )

    assert [t.question for t in built.turns] == ["Show me a heat pump diagram"]
    text = render_thread(built)
    assert "- image: [Heat pump cycle diagram](https://img.example/hp.png)" in text
    assert "- file: [quote.pdf](https://files.example/uploads/quote.pdf)" in text
    assert "_(no answer)_" not in text


def test_a_run_killed_after_some_writes_resumes_without_refetching_or_calling_them_new(
    tmp_path: Path,
) -> None:
    writer = ThreadWriter(tmp_path)
    threads = [
        thread(f"u{n}", f"Question {n}?", f"Answer {n}.", datetime(2025, 1, n + 1, tzinfo=UTC))
        for n in range(5)
    ]
    for item in threads:
        writer.write(item, f"listing-{item.uuid}")
    # killed here: close() never runs

    resumed = ThreadWriter(tmp_path)

    assert (tmp_path / CHECKPOINT_NAME).exists()
    assert all(resumed.is_current(t.uuid, f"listing-{t.uuid}") for t in threads)
    assert {resumed.write(t, f"listing-{t.uuid}")[0] for t in threads} == {WriteOutcome.UNCHANGED}


DIVIDER = '<div align="center">⁂</div>'
YAML_ANSWER = """Two documents in one file:

```html
<img src="logo.png" style="height:64px"/>
<div align="center">⁂</div>
```

```yaml
---
# first document
name: a
---
# second document
name: b
[^1]: not a footnote, a line of the example
```

Each `---` starts a document.[^1]"""


def test_code_in_an_official_export_is_never_cut_into_turns_or_stripped_of_footnote_lookalikes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "YAML.md").write_text(
        f"# How do I put two YAML documents in one file?\n\n{YAML_ANSWER}\n\n"
        f"{DIVIDER}\n\n[^1]: https://yaml.org/spec/1.2.2/\n\n---\n\n"
        "# And in JSON?\n\nJSON has no documents; use JSON Lines.[^1]\n\n[^1]: https://jsonlines.org/\n"
    )

    (thread,) = threads_from_markdown_dir(folder, MAX_BYTES).threads

    assert [t.question for t in thread.turns] == [
        "How do I put two YAML documents in one file?",
        "And in JSON?",
    ]
    for fence in ("```html", "```yaml"):
        code = YAML_ANSWER.split(fence, 1)[1].split("```", 1)[0]
        assert code in thread.turns[0].answer
    assert [s.url for s in thread.turns[0].sources] == ["https://yaml.org/spec/1.2.2/"]


def test_a_subagent_entry_that_holds_text_is_kept_as_a_turn_not_dropped_as_a_stub() -> None:
    holding = {
        "uuid": "e3",
        "query_str": "Compare the ryokan prices",
        "blocks": [
            {"intended_usage": "subagent_result", "subagent_block": {"summary": "Three options found."}}
        ],
    }
    empty = {
        "uuid": "e4",
        "query_str": "",
        "blocks": [{"intended_usage": "subagent_result", "subagent_block": {}}],
    }

    built = build_thread(
        [holding, empty], {"title": "Kyoto"}, ThreadSummary(uuid="t2"), "https://www.perplexity.ai"
    )

    assert [t.question for t in built.turns] == ["Compare the ryokan prices"]


# An answer that writes a README for the user holds a whole Markdown file: a four-backtick fence
# around ```bash blocks (CommonMark 0.31, "Fenced code blocks": the closing fence must be of the same
# character and at least as long as the opening one, so a ``` line inside ```` is content), and a
# ~~~ fence may hold ``` lines too. The `## ` comment and heading inside are the README's, not turns.
README_ANSWER = """Here is a README template:

````markdown
# My Project

```bash
## install the dependencies
pip install my-project
```

## Usage

Run `my-project --help`.
````

Fill in the blanks, then see the tilde example:

~~~text
```
## inside a tilde fence
~~~

That closes the tilde fence."""


def test_a_readme_answer_whose_fence_holds_fences_keeps_every_passage_in_its_own_turn(
    question_of_passage: Callable[[str, str], str | None],
) -> None:
    thread = Thread(
        uuid="u-2",
        title="README template",
        turns=[
            Turn(question="Write a README template for a Python CLI", answer=README_ANSWER),
            Turn(question="Add a license section", answer="Add `## License` with MIT."),
        ],
    )
    text = render_thread(thread)
    _, body_start = split_front_matter(text)

    assert README_ANSWER in text  # nothing inside code was demoted
    assert turn_questions(text[body_start:]) == [
        "Write a README template for a Python CLI",
        "Add a license section",
    ]
    for phrase in ("Fill in the blanks", "That closes the tilde fence."):
        assert question_of_passage(text, phrase) == "Write a README template for a Python CLI"
    turns = [s.heading_path[1:] for s in markdown_sections(text, body_start) if len(s.heading_path) > 1]
    assert turns == [("Write a README template for a Python CLI",), ("Add a license section",)]
