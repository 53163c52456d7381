"""The page renders what it quotes, in real Chromium at 1280 and 390 px against the real local stack:
Markdown from a real README (Debian's libcbor one) as bold, code and a plain title, through the
vendored markdown-it and DOMPurify, while a ``<script>`` and an ``onerror`` planted in the source stay
text and never run; a PDF's citation, and its source card, open the cited page with the quote marked;
an HTML page's citation shows the page as published in a sandboxed frame where its scripts never run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.gateway.conftest import PAGES, REPO
from tests.indexer.documents import ARTICLE_HTML, write_pdf
from tests.ui.conftest import WIDTHS, Stack, open_page, screenshot

pytestmark = [pytest.mark.integration, pytest.mark.browser]
README = REPO / "tests" / "fixtures" / "readmes" / "libcbor-README.md"
ANSWER_TIMEOUT_MS = 90_000


def index(stack: Stack, folder: Path) -> Path:
    """Index ``folder`` through the API and wait for the job to finish."""
    with stack.client() as http:
        accepted = http.post("/v1/index", json={"root": str(folder)})
        accepted.raise_for_status()
        with http.stream("GET", accepted.json()["events_url"], timeout=120) as events:
            for line in events.iter_lines():
                if '"stage":"index"' in line.replace(" ", "") and '"status":"done"' in line.replace(" ", ""):
                    break
    return folder


@pytest.fixture(scope="module")
def readmes(stack: Stack) -> Path:
    """The libcbor README indexed in its own folder of the stack's library."""
    folder = stack.library / "readmes"
    folder.mkdir()
    shutil.copy(README, folder / "README.md")
    return index(stack, folder)


@pytest.fixture(scope="module")
def manuals(stack: Stack) -> Path:
    """A three-page PDF manual (fpdf2, the indexer tests' maker) indexed in its own folder."""
    folder = stack.library / "manuals"
    folder.mkdir()
    write_pdf(folder / "libtasn1.pdf", PAGES, title="GNU libtasn1 manual")
    return index(stack, folder)


# The reranker article with a script and an onerror planted: shown as published, neither may run.
PLANTED_HTML = ARTICLE_HTML.replace(
    "</article>",
    '<script>parent.__ran = 1; window.__ran = 1</script><img src=x onerror="parent.__ran = 2"></article>',
)


@pytest.fixture(scope="module")
def articles(stack: Stack) -> Path:
    """An HTML article with a planted script indexed in its own folder."""
    folder = stack.library / "articles"
    folder.mkdir()
    (folder / "rerankers.html").write_text(PLANTED_HTML)
    return index(stack, folder)


def answered(browser: Browser, stack: Stack, question: str, width: int) -> Page:
    """A fresh page at ``width`` px that asked ``question`` and shows its answer with citations."""
    page = open_page(browser, f"{stack.url}/#key={stack.key}", width)
    page.fill("#question", question)
    page.click("#ask")
    expect(page.locator("#answer a.cite").first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    return page


def nothing_ran(page: Page) -> None:
    assert page.evaluate("window.__ran") is None
    assert page.locator("script:not([src]), img[onerror], [onerror]").count() == 0


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_a_readme_passage_renders_bold_and_code_and_its_planted_script_stays_text(
    browser: Browser, stack: Stack, readmes: Path, width_name: str
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS[width_name])
    page.click("#tab-search")
    page.fill("#search-query", "compile libcbor from source with cmake")
    page.select_option("#search-mode", "hybrid")
    page.click("#search")
    results = page.locator("#results li", has_text="README.md")
    expect(results.first.locator(".head strong")).to_have_text("libcbor")  # not "[libcbor](https://…"
    expect(results.locator(".text strong", has_text="libcbor").first).to_be_visible()
    command = "cmake -DCMAKE_BUILD_TYPE=Release"
    expect(results.locator(".text pre code", has_text=command).first).to_be_visible()
    planted = '<script>window.__ran = "script";</script>'
    expect(results.locator(".text", has_text=planted).first).to_be_visible()
    assert "**libcbor**" not in "".join(results.all_inner_texts())
    nothing_ran(page)
    screenshot(page, f"markdown-search-{width_name}")


def test_an_answer_quoting_the_readme_renders_its_markdown_with_working_citations(
    browser: Browser, stack: Stack, readmes: Path
) -> None:
    page = answered(browser, stack, "What is libcbor?", WIDTHS["desktop"])
    expect(page.locator("#answer strong").first).to_have_text("libcbor")
    expect(page.locator("#answer")).not_to_contain_text("**")
    expect(page.locator("#sources .title").first).to_have_text("libcbor")
    expect(page.locator("#relevance")).to_contain_text("How well it answers")
    expect(page.locator("#verification")).to_contain_text("quotes found in their files")
    page.locator("#answer a.cite").first.click()
    expect(page.locator("#evidence mark")).to_be_visible()
    expect(page.locator("#evidence")).to_contain_text("quote found in file")
    nothing_ran(page)
    screenshot(page, "markdown-answer-desktop")


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_a_pdf_citation_and_its_source_card_open_the_cited_page_with_the_quote_marked(
    browser: Browser, stack: Stack, manuals: Path, width_name: str
) -> None:
    page = answered(browser, stack, "What does asn1_der_coding do?", WIDTHS[width_name])
    card = page.locator("#sources li.cited", has_text="libtasn1.pdf").first
    expect(card).to_contain_text("open cited passage")
    card.click()
    evidence = page.locator("#evidence")
    expect(evidence).to_contain_text(f"{manuals / 'libtasn1.pdf'}#page=2")
    expect(evidence).to_contain_text("Page 2 of the PDF")
    expect(evidence.locator("mark")).to_contain_text("asn1_der_coding")
    expect(evidence.locator("pre")).to_contain_text("Chapter 2. Usage.")
    expect(evidence.locator("pre")).not_to_contain_text("Chapter 1.")
    expect(evidence).not_to_contain_text("source text unavailable")
    printed = evidence.locator(".pdf-page canvas")
    expect(printed).to_have_attribute("aria-label", "page 2 of the PDF")  # the cited page, drawn by PDF.js
    expect(evidence.locator(".pdf-page .pdf-mark").first).to_be_visible()  # the quote marked on it
    canvas, mark = printed.bounding_box(), evidence.locator(".pdf-page .pdf-mark").first.bounding_box()
    assert canvas and mark and canvas["y"] <= mark["y"] <= canvas["y"] + canvas["height"]
    assert page.evaluate(
        "document.querySelector('.pdf-page canvas').getContext('2d')"
        ".getImageData(0, 0, 400, 400).data.some((v, i) => i % 4 !== 3 && v < 128)"
    )  # ink
    screenshot(page, f"pdf-evidence-{width_name}")


def test_an_html_citation_shows_the_page_as_published_in_a_frame_where_its_script_never_runs(
    browser: Browser, stack: Stack, articles: Path
) -> None:
    page = answered(browser, stack, "How many pairs per batch keep the CPU busy?", WIDTHS["desktop"])
    page.locator("#sources li.cited", has_text="rerankers.html").first.click()
    page.get_by_role("button", name="Show the page as published").click()
    frame = page.locator("#evidence iframe.published")
    expect(frame).to_have_attribute("sandbox", "")
    published = page.frame_locator("#evidence iframe.published")
    expect(published.locator("h2")).to_have_text("Batching the pairs")
    page.wait_for_timeout(500)
    assert page.evaluate("window.__ran") is None  # neither the script nor the onerror ran
    with stack.client() as http:  # the page's address names the conversation; its answer, the citation
        turn = http.get(f"/v1/conversations/{page.evaluate('location.hash').split('=')[-1]}").json()["turns"][
            -1
        ]
        [number] = [c["number"] for c in turn["answer"]["citations"] if c["source_uri"].endswith(".html")][:1]
        served = http.get(f"/v1/questions/{turn['id']}/citations/{number}/file")
    assert served.headers["content-type"].startswith("text/html")
    assert served.headers["content-security-policy"].startswith("sandbox")  # opened directly: still inert
    screenshot(page, "html-published-desktop")
