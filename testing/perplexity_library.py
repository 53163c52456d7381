"""A 34-thread Perplexity library in every shape that has lost or mangled data, and what it must export as.

One user's history reaches Hindsight three ways at once: scraped from the replay server
(:mod:`testing.perplexity_replay`), downloaded as the official per-thread Markdown, and sent as the
bulk data-request JSON. The shapes come from public evidence: answers with fenced code, ``##``
headings and ``***`` rules as in official exports committed to public repositories; the 2026
per-thread Markdown (``[^n]`` footnotes, ``<div align="center">⁂</div>``, the hidden ``display:none``
span, ``[^1]: image.jpg`` / ``[^5]: paste.txt`` attached-file footnotes, ``\\&``-escaped URLs); the
data-request fields FraYoshi/perplexity-export-convert reads (``context_title``, ``created_at``,
``collection_uuid``, ``entries[].query/answer``); entry media and attachments as Yiksing/pplx-tools
documents them; Computer sub-agent stubs; repeated prompts (scheduled tasks) and same-title threads.
The texts are Hindsight's own.

:data:`EXPECTED` is the library as it must land in the export folder: every distinct thread once,
each turn's question exactly as asked, each answer's code byte for byte, each footnote a numbered
source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testing.perplexity_replay import ReplayEntry, ReplayLibrary, ReplayThread, Shape

SCRAPED, IMPORTED, BOTH = "scraped", "imported", "both"


@dataclass
class ExpectedThread:
    title: str
    space: str
    questions: list[str]
    answers: list[str]
    sources: list[list[str]]
    origin: str
    attachment_lines: list[str] = field(default_factory=list)


def _src(*urls: str) -> list[dict[str, str]]:
    return [{"name": f"Source at {url.split('/')[2]}", "url": url, "snippet": ""} for url in urls]


PHONE_ANSWER = """Use a raw string so the backslashes reach the regex engine:

```python
import re

PHONE = re.compile(r"\\(\\d{3}\\) \\d{3}-\\d{4}")
assert PHONE.fullmatch("(555) 123-4567")
```

The escaped \\( and \\) match literal brackets, and `\\d{3}` matches three digits [1]."""

PHONE_FOLLOWUP = """Make the prefix an optional group:

```python
PHONE = re.compile(r"^(\\+1 )?\\(\\d{3}\\) \\d{3}-\\d{4}$")
```

`(\\+1 )?` matches "+1 " zero or one time [1]."""

POSTGRES_ANSWER = """# Overview

PostgreSQL 16 is in Ubuntu's own archive [1].

## Installation Steps

```bash
## refresh the package lists first
sudo apt update
sudo apt install -y postgresql
# check the service
systemctl status postgresql
```

***

## Next steps

Create a role for your user [2]."""

POSTGRES_FOLLOWUP = """### Edit pg_hba.conf

```conf
# TYPE  DATABASE  USER  ADDRESS       METHOD
host    all       all   10.0.0.0/8    scram-sha-256
```

Then set `listen_addresses = '*'` in postgresql.conf and restart [1]."""

SODIUM_QUESTION = (
    "Research sodium-ion batteries for grid storage\nCompare cost per kWh with LFP\nCite 2024 sources"
)
SODIUM_ANSWER = """## Sodium-ion batteries for grid storage

Sodium-ion cells cost about 10-20 % less per kWh than LFP at scale [1], with lower energy density [2].

## Outlook

CATL and BYD began mass production in 2024 [1]."""

MERGE_ANSWER = (
    "Merge sort runs in \\( O(n \\log n) \\) time: the recurrence \\[ T(n) = 2T(n/2) + n \\] "
    "solves by the [master theorem](pplx://action/master-theorem) [1]."
)

FILLER = [
    (
        "Sourdough starter feeding",
        "How often should I feed a sourdough starter?",
        "Daily at room temperature, weekly in the fridge [1].",
        "Home",
    ),
    (
        "Espresso grind size",
        "Why does my espresso taste sour?",
        "Sour shots are under-extracted: grind finer or raise the temperature [1].",
        "Home",
    ),
    (
        "Rust borrow checker",
        "What does the borrow checker enforce?",
        "One mutable reference or many shared ones, never both [1].",
        "Code",
    ),
    (
        "Tide pools",
        "What lives in a tide pool?",
        "Anemones, sea stars, hermit crabs and mussels [1].",
        "General",
    ),
    (
        "VO2 max training",
        "How do I raise my VO2 max?",
        "Intervals of 3-5 minutes near maximal effort, twice a week [1].",
        "Research",
    ),
    (
        "Mortgage overpayment",
        "Is overpaying a mortgage worth it?",
        "It pays when the rate beats what savings earn after tax [1].",
        "General",
    ),
    (
        "Git rebase vs merge",
        "When should I rebase instead of merge?",
        "Rebase private branches; merge shared ones [1].",
        "Code",
    ),
    (
        "Houseplant light",
        "Which houseplants survive low light?",
        "Snake plants, ZZ plants and pothos [1].",
        "Home",
    ),
    (
        "CRISPR off-target",
        "How are CRISPR off-target effects measured?",
        "GUIDE-seq and CIRCLE-seq map cut sites genome-wide [1].",
        "Research",
    ),
    (
        "Bike chain wear",
        "When should I replace a bike chain?",
        "At 0.5 % stretch on an 11-speed chain [1].",
        "General",
    ),
    (
        "Docker layer cache",
        "Why does Docker rebuild every layer?",
        "A changed file early in the Dockerfile invalidates every later layer [1].",
        "Code",
    ),
    (
        "Jet lag",
        "How do I beat jet lag flying east?",
        "Shift sleep earlier before the trip and seek morning light [1].",
        "General",
    ),
    (
        "Compost ratio",
        "What carbon to nitrogen ratio should compost have?",
        "About 30:1 browns to greens by weight [1].",
        "Home",
    ),
    (
        "Solar panel angle",
        "What tilt should solar panels have in Berlin?",
        "About 35 degrees facing south [1].",
        "Research",
    ),
]


def _thread(n: int, title: str, entries: list[ReplayEntry], space: str, day: str) -> ReplayThread:
    uuid = f"a0000000-0000-4000-8000-{n:012d}"
    return ReplayThread(
        uuid=uuid,
        slug=f"{title.lower().replace(' ', '-')}-{n:022d}",
        title=title,
        entries=entries,
        space=space,
        created_at=f"{day}T09:00:00.000000",
        last_query_datetime=f"{day}T10:00:00.000000",
    )


def scraped_threads() -> list[ReplayThread]:
    """The threads the replay server lists, in every scraped shape."""
    threads = [
        _thread(
            1,
            "Regex for US phone numbers",
            [
                ReplayEntry(
                    "Write a Python regex for US phone numbers like (555) 123-4567",
                    PHONE_ANSWER,
                    _src("https://docs.python.org/3/library/re.html"),
                    created="2025-02-01T09:00:00.000000",
                ),
                ReplayEntry(
                    "How do I also allow an optional +1 prefix?",
                    PHONE_FOLLOWUP,
                    _src("https://www.regular-expressions.info/optional.html"),
                    created="2025-02-01T09:05:00.000000",
                    shape=Shape.BLOCKS_ONLY,
                ),
            ],
            "Code",
            "2025-02-01",
        ),
        _thread(
            2,
            "Install PostgreSQL on Ubuntu",
            [
                ReplayEntry(
                    "How do I install PostgreSQL on Ubuntu 24.04?",
                    POSTGRES_ANSWER,
                    _src(
                        "https://www.postgresql.org/download/linux/ubuntu/",
                        "https://www.postgresql.org/docs/16/sql-createrole.html",
                    ),
                    created="2025-02-02T09:00:00.000000",
                ),
                ReplayEntry(
                    "How do I enable remote connections?",
                    POSTGRES_FOLLOWUP,
                    _src("https://www.postgresql.org/docs/16/auth-pg-hba-conf.html"),
                    created="2025-02-02T09:10:00.000000",
                ),
            ],
            "Code",
            "2025-02-02",
        ),
        _thread(
            3,
            "Research sodium-ion batteries",
            [
                ReplayEntry(
                    SODIUM_QUESTION,
                    SODIUM_ANSWER,
                    _src(
                        "https://www.iea.org/reports/batteries-2024",
                        "https://www.nature.com/articles/s41560-024-0001",
                    ),
                    created="2025-02-03T09:00:00.000000",
                    shape=Shape.BLOCKS_ONLY,
                ),
            ],
            "Research",
            "2025-02-03",
        ),
        _thread(
            4,
            "Best laptop for travel",
            [
                ReplayEntry(
                    "Best laptop for travel?",
                    "A 13-inch ultrabook under 1.3 kg with all-day battery [1].",
                    _src("https://www.notebookcheck.net/travel"),
                    created="2025-02-04T09:00:00.000000",
                ),
            ],
            "General",
            "2025-02-04",
        ),
        _thread(
            5,
            "Best laptop for travel",
            [
                ReplayEntry(
                    "Best laptop for travel under 1 kg with 20 h battery?",
                    "The 980 g models with 70 Wh cells come closest [1].",
                    _src("https://www.rtings.com/laptop/travel"),
                    created="2025-04-05T09:00:00.000000",
                ),
            ],
            "General",
            "2025-04-05",
        ),
        _thread(
            6,
            "How do heat pumps work?",
            [
                ReplayEntry(
                    "How do heat pumps work?",
                    "They move heat from outside air into the house with a compressor and refrigerant [1].",
                    _src("https://www.energy.gov/energysaver/heat-pump-systems"),
                    created="2025-03-04T09:00:00.000000",
                ),
            ],
            "Home",
            "2025-03-04",
        ),
        _thread(
            7,
            "Heat pump diagram",
            [
                ReplayEntry(
                    "Show me a diagram of the heat pump cycle, and check my installer's quote",
                    "Here is the cycle; the quote's 9 kW unit is sized right [1].",
                    _src("https://en.wikipedia.org/wiki/Heat_pump"),
                    created="2025-03-05T09:00:00.000000",
                    media=[
                        {
                            "medium": "image",
                            "image": "https://upload.wikimedia.org/heat-pump-cycle.png",
                            "url": "https://en.wikipedia.org/wiki/Heat_pump",
                            "name": "Heat pump refrigeration cycle",
                        }
                    ],
                    attachments=[
                        "https://ppl-ai-file-upload.s3.amazonaws.com/web/direct-files/123/installer-quote.pdf"
                    ],
                ),
            ],
            "Home",
            "2025-03-05",
        ),
        _thread(
            8,
            "Plan a 3-day Kyoto trip",
            [
                ReplayEntry(
                    "Plan a 3-day Kyoto trip in April",
                    "Day 1 Higashiyama, day 2 Arashiyama, day 3 Fushimi Inari [1].",
                    _src("https://www.japan-guide.com/e/e2158.html"),
                    created="2025-03-06T09:00:00.000000",
                ),
                ReplayEntry("", "", [], created="2025-03-06T09:01:00.000000", shape=Shape.SUBAGENT_STUB),
                ReplayEntry(
                    "Book the ryokan options you found",
                    "Three ryokan near Gion have rooms from 28,000 yen [1].",
                    _src("https://www.japanican.com/kyoto"),
                    created="2025-03-06T09:20:00.000000",
                ),
            ],
            "General",
            "2025-03-06",
        ),
        _thread(
            9,
            "Solid-state batteries 2025",
            [
                ReplayEntry(
                    "State of solid-state batteries in 2025",
                    "## Summary\n\nPilot lines exist; mass production is expected after 2027 [1].",
                    _src("https://www.sciencedirect.com/solid-state-2025"),
                    created="2025-03-07T09:00:00.000000",
                    shape=Shape.WORKFLOW,
                ),
            ],
            "Research",
            "2025-03-07",
        ),
        _thread(
            10,
            "Who invented the transistor?",
            [
                ReplayEntry(
                    "Who invented the transistor?",
                    "Bardeen and Brattain at Bell Labs in 1947 [1], with Shockley's junction design "
                    "in 1948 [2].",
                    _src(
                        "https://www.nobelprize.org/prizes/physics/1956/summary/",
                        "https://www.computerhistory.org/transistor",
                    ),
                    created="2025-03-08T09:00:00.000000",
                    shape=Shape.SOURCES_MODE,
                ),
            ],
            "Research",
            "2025-03-08",
        ),
        _thread(
            11,
            "Merge sort complexity",
            [
                ReplayEntry(
                    "Explain the complexity of merge sort",
                    MERGE_ANSWER,
                    _src("https://en.wikipedia.org/wiki/Merge_sort"),
                    created="2025-03-09T09:00:00.000000",
                ),
            ],
            "Code",
            "2025-03-09",
        ),
    ]
    for n, (title, question, answer, space) in enumerate(FILLER, start=12):
        day = f"2025-05-{n:02d}"
        entries = [
            ReplayEntry(
                question,
                answer,
                _src(f"https://example.org/{n}"),
                created=f"{day}T09:00:00.000000",
                shape=Shape.BLOCKS_ONLY if n % 2 else Shape.CLASSIC,
            )
        ]
        if n % 3 == 0:
            entries.append(
                ReplayEntry(
                    f"Tell me more about {title.lower()}",
                    f"More on {title.lower()} [1].",
                    _src(f"https://example.org/{n}/more"),
                    created=f"{day}T09:30:00.000000",
                )
            )
        threads.append(_thread(n, title, entries, space, day))
    return threads


def replay_library() -> ReplayLibrary:
    return ReplayLibrary(threads=scraped_threads(), entries_page_size=2)


LOGO = (
    '<img src="https://r2cdn.perplexity.ai/pplx-full-logo-primary-dark%402x.png" '
    'style="height:64px;margin-right:32px"/>'
)
DIVIDER = '<div align="center">⁂</div>'


def official_turn(question: str, answer: str, targets: list[str], hidden: tuple[int, ...] = ()) -> str:
    """One turn of the 2026 per-thread Markdown: ``[^n]`` markers in ``answer`` are written by the
    caller; ``targets`` are the footnote definitions in order."""
    span = f'\n<span style="display:none">{"".join(f"[^{n}]" for n in hidden)}</span>' if hidden else ""
    definitions = "\n\n".join(f"[^{n}]: {target}" for n, target in enumerate(targets, start=1))
    return f"# {question}\n\n{answer}{span}\n\n{DIVIDER}\n\n{definitions}\n"


HEAT_QUOTE_QUESTION = (
    "Compare these two heat pump quotes\nthe first is 9 kW, the second 12 kW\nwhich one fits a 120 m² house?"
)
HEAT_QUOTE_ANSWER = (
    "The 9 kW unit fits most 120 m² houses.[^1][^3] Your attached quote lists a buffer tank.[^2]\n\n"
    "***\n\n## Sizing\n\nSize from the heat loss, not the floor area.[^3]"
)
HEAT_QUOTE_URL = "https://www.energysavingtrust.org.uk/advice/air-source-heat-pumps/?vt=4\\&node_id=12"
K8S_TURNS = [
    (
        "Plan a Kubernetes 1.29 to 1.31 upgrade",
        "Upgrade one minor version at a time: 1.30 first.[^1]",
        ["https://kubernetes.io/releases/version-skew-policy/"],
    ),
    (
        "What breaks between 1.29 and 1.30?",
        "Check removed beta APIs with `kubectl convert`.[^1]",
        ["https://kubernetes.io/docs/reference/using-api/deprecation-guide/"],
    ),
    (
        "And the node pools?",
        "Drain and replace node pools after the control plane.[^1]",
        ["https://cloud.google.com/kubernetes-engine/docs/how-to/upgrading-a-cluster"],
    ),
]


def official_files(folder: Path) -> None:
    """The per-thread Markdown the user downloaded, as the browser names the files."""
    folder.mkdir(parents=True, exist_ok=True)
    sodium = SODIUM_ANSWER.replace("[1]", "[^1]").replace("[2]", "[^2]")
    files = {
        "Research sodium-ion batteries.md": official_turn(
            SODIUM_QUESTION,
            sodium,
            ["https://www.iea.org/reports/batteries-2024", "https://www.nature.com/articles/s41560-024-0001"],
        ),
        "Heat pump quotes.md": official_turn(
            HEAT_QUOTE_QUESTION,
            HEAT_QUOTE_ANSWER,
            [HEAT_QUOTE_URL, "paste.txt", "https://www.example.org/heat-loss", "image.jpg"],
            hidden=(4,),
        ),
        "Weekly AI news.md": official_turn(
            "What happened in AI this week?",
            "Open-weight models caught up on coding benchmarks.[^1]",
            ["https://www.theverge.com/ai-week-22"],
        ),
        "Weekly AI news (1).md": official_turn(
            "What happened in AI this week?",
            "Regulators published the first AI Act codes of practice.[^1]",
            ["https://digital-strategy.ec.europa.eu/ai-act"],
        ),
    }
    k8s = [official_turn(q, a, t) for q, a, t in K8S_TURNS]
    files["Kubernetes upgrade plan.md"] = "\n---\n\n".join(k8s[:2])
    files["Kubernetes upgrade plan (1).md"] = "\n---\n\n".join(k8s[1:])
    for name, text in files.items():
        (folder / name).write_text(f"{LOGO}\n\n{text}", encoding="utf-8")


def _conversation(
    title: str, created: str, query: str, answer: str, collection_uuid: str | None = None
) -> dict[str, Any]:
    return {
        "context_title": title,
        "created_at": created,
        "mode": "copilot",
        "collection_uuid": collection_uuid,
        "entries": [
            {
                "query": query,
                "answer": answer,
                "mode": "copilot",
                "created_at": created,
                "query_status": "COMPLETED",
            }
        ],
    }


HEAT_PUMPS_2024 = "A heat pump runs a refrigeration cycle in reverse, pumping heat uphill from cold air [1]."


def data_export(path: Path) -> None:
    """The bulk data-request JSON (no uuids, no sources, spaces by uuid)."""
    conversations = [
        _conversation(
            "How do heat pumps work?", "2024-03-02T10:00:00Z", "How do heat pumps work?", HEAT_PUMPS_2024
        ),
        _conversation(
            "How do heat pumps work?",
            "2025-03-04T09:00:00Z",
            "How do heat pumps work?",
            "They move heat from outside air into the house with a compressor and refrigerant [1].",
            "c-Home",
        ),
        _conversation(
            "Descaling a kettle",
            "2025-06-01T08:00:00Z",
            "How do I descale a kettle?",
            "Boil equal parts water and white vinegar, then rinse twice.",
            "c-Home",
        ),
        _conversation(
            "Gift ideas",
            "2025-06-02T08:00:00Z",
            "Gift ideas for a 10-year-old who likes space?",
            "A planisphere, a Lego Saturn V or a beginner telescope.",
            "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
        ),
        _conversation(
            "Daily market summary",
            "2025-06-03T07:00:00Z",
            "Summarize today's market moves",
            "Stocks rose 0.8 % on softer inflation data.",
        ),
        _conversation(
            "Daily market summary",
            "2025-06-04T07:00:00Z",
            "Summarize today's market moves",
            "Stocks fell 1.2 % as bond yields jumped.",
        ),
    ]
    path.write_text(json.dumps({"conversations": conversations}, ensure_ascii=False), encoding="utf-8")


def _urls(entry: ReplayEntry) -> list[str]:
    return [s["url"] for s in entry.sources]


def expected_threads() -> list[ExpectedThread]:
    """Every distinct thread once, as it must be written."""
    expected = []
    both = {"Research sodium-ion batteries", "How do heat pumps work?"}
    for thread in scraped_threads():
        entries = [e for e in thread.entries if e.shape is not Shape.SUBAGENT_STUB]
        attachments = [
            line
            for e in entries
            for line in (
                *(f"- {m['medium']}: [{m['name']}]({m['image']})" for m in e.media),
                *(f"- file: [{url.rsplit('/', 1)[-1]}]({url})" for url in e.attachments),
            )
        ]
        expected.append(
            ExpectedThread(
                title=thread.title,
                space=thread.space or "General",
                questions=[e.question for e in entries],
                answers=[e.answer for e in entries],
                sources=[_urls(e) for e in entries],
                origin=BOTH if thread.title in both else SCRAPED,
                attachment_lines=attachments,
            )
        )
    expected += [
        ExpectedThread(
            "Heat pump quotes",
            "General",
            [HEAT_QUOTE_QUESTION],
            [HEAT_QUOTE_ANSWER],
            [[HEAT_QUOTE_URL.replace("\\&", "&"), "", "https://www.example.org/heat-loss", ""]],
            IMPORTED,
            ["- file: paste.txt", "- image: image.jpg"],
        ),
        ExpectedThread(
            "Weekly AI news",
            "General",
            ["What happened in AI this week?"],
            [""],
            [["https://www.theverge.com/ai-week-22"]],
            IMPORTED,
        ),
        ExpectedThread(
            "Weekly AI news",
            "General",
            ["What happened in AI this week?"],
            [""],
            [["https://digital-strategy.ec.europa.eu/ai-act"]],
            IMPORTED,
        ),
        ExpectedThread(
            "Kubernetes upgrade plan",
            "General",
            [q for q, _, _ in K8S_TURNS],
            [a for _, a, _ in K8S_TURNS],
            [t for _, _, t in K8S_TURNS],
            IMPORTED,
        ),
        ExpectedThread(
            "How do heat pumps work?",
            "General",
            ["How do heat pumps work?"],
            [HEAT_PUMPS_2024],
            [[]],
            IMPORTED,
        ),
        ExpectedThread("Descaling a kettle", "Home", ["How do I descale a kettle?"], [""], [[]], IMPORTED),
        ExpectedThread(
            "Gift ideas",
            "Space 9f1c2d3e",
            ["Gift ideas for a 10-year-old who likes space?"],
            [""],
            [[]],
            IMPORTED,
        ),
        ExpectedThread(
            "Daily market summary",
            "General",
            ["Summarize today's market moves"],
            ["Stocks rose"],
            [[]],
            IMPORTED,
        ),
        ExpectedThread(
            "Daily market summary",
            "General",
            ["Summarize today's market moves"],
            ["Stocks fell"],
            [[]],
            IMPORTED,
        ),
    ]
    return expected
