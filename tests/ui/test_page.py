"""The web page in real Chromium at 1280 and 390 px against the real local stack: the answer first,
its sources and stage summary, history and permalinks, copy, search with filters, the library, dark
mode, a clickable ``[n]`` on a phone, a question with no worker to take it, a wrong key, a follow-up
in a conversation's thread, an answer saved as a note, a how-to answer's command as a code block, a
thread's link in the copied Markdown, and a Windows-1252 note's evidence saying how it was decoded."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from services.scraper.imports import threads_from_data_export, write_threads
from tests.conftest import REPO, run_hindsight
from tests.scraper.conftest import data_export
from tests.ui.conftest import WIDTHS, Stack, open_page, screenshot

pytestmark = [pytest.mark.integration, pytest.mark.browser]
QUESTION = "What is my sourdough starter called?"
FOLLOW_UP = "How often is it fed?"
ANSWER_TIMEOUT_MS = 90_000
NO_WORKER = (
    "no live worker for the retrieve, rerank, map and reduce stages "
    "(the retriever, reranker, mapper and reducer workers)"
)


def ask(page: Page, question: str) -> None:
    page.fill("#question", question)
    page.click("#ask")
    page.wait_for_selector("#answer a.cite, #ask-error:not([hidden])", timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator("#ask-error")).to_be_hidden()
    expect(page.locator("#answer a.cite").first).to_be_visible()


def no_sideways_scroll(page: Page) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_the_answer_comes_first_with_its_sources_and_a_one_line_stage_summary(
    browser: Browser, stack: Stack, width_name: str
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS[width_name])
    ask(page, QUESTION)
    answer_top = page.locator("#answer").bounding_box()["y"]  # type: ignore[index]
    assert answer_top < page.locator("#stage-details").bounding_box()["y"]  # type: ignore[index]
    expect(page.locator("#answer")).to_contain_text("Clint")
    expect(page.locator("#stage-line")).to_have_text(
        re.compile(r"^Searched your notes · \d+ passages · \d+ sources")
    )
    expect(page.locator("#sources li").first).to_be_visible()
    expect(page.locator("#stages")).to_be_hidden()
    screenshot(page, f"answer-first-{width_name}")

    page.click("#stage-line")
    expect(page.locator("#stages li[data-stage=rerank]").first).to_be_visible()
    screenshot(page, f"stages-expanded-{width_name}")
    assert no_sideways_scroll(page)


def test_a_citation_opens_its_evidence_with_one_tap_at_phone_width(browser: Browser, stack: Stack) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"])
    ask(page, QUESTION)
    citation = page.locator("#answer a.cite").first
    box = citation.bounding_box()
    assert box is not None and box["width"] >= 24 and box["height"] >= 20, box
    citation.click()
    expect(page.locator("#evidence mark")).to_be_visible()
    assert "Clint" in page.locator("#evidence pre").inner_text()
    assert "---" not in page.locator("#evidence pre").inner_text()[:5]
    assert no_sideways_scroll(page)
    screenshot(page, "evidence-phone")


def test_a_perplexity_thread_is_cited_by_its_title_question_and_address(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    ask(page, "How long can sourdough proof in the fridge?")
    thread_source = page.locator("#sources li", has_text="Proofing sourdough")
    expect(thread_source).to_contain_text("markdown · Baking · 2025-03-02")
    thread_citation = page.locator("#answer a.cite[title*='Proofing sourdough']").first
    thread_citation.click()
    title = page.locator("#evidence .evidence-title a")
    expect(title).to_have_text("Proofing sourdough in the fridge")
    assert (
        title.get_attribute("href")
        == "https://www.perplexity.ai/search/proofing-sourdough-in-the-fridge-7f1c"
    )
    expect(page.locator("#evidence .turn")).to_have_text(
        "Asked: How long can sourdough dough proof in the fridge?"
    )
    assert "source:" not in page.locator("#evidence pre").inner_text()
    place = page.locator("#evidence p.muted").first
    # the file and its line, not the thread link with a line
    expect(place).to_contain_text("Proofing sourdough in the fridge (7f1c).md:")
    expect(place).not_to_contain_text("perplexity.ai")
    screenshot(page, "perplexity-evidence-desktop")


def test_history_lists_the_question_and_its_permalink_reopens_the_answer(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    ask(page, QUESTION)
    expect(page.locator("#history li a").first).to_have_text(QUESTION)
    permalink = page.locator("#permalink").get_attribute("href")
    assert permalink and permalink.startswith("#c=")  # the question's conversation

    again = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"])
    again.goto(f"{stack.url}/{permalink}")
    again.reload()
    expect(again.locator("#answer a.cite").first).to_be_visible()
    expect(again.locator("#answer-question")).to_have_text(QUESTION)
    screenshot(again, "permalink-phone")


def test_copy_puts_the_answer_and_its_sources_on_the_clipboard_as_markdown(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    ask(page, QUESTION)
    page.click("#copy")
    expect(page.locator("#copy-status")).to_have_text("copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(f"## {QUESTION}") and "### Sources" in copied
    assert re.search(r"^\[1\] .+ — /.+sourdough\.md", copied, re.MULTILINE), copied


def test_copy_of_an_answer_citing_a_thread_carries_the_threads_perplexity_link_after_its_file(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    ask(page, "How long can sourdough proof in the fridge?")
    page.click("#copy")
    expect(page.locator("#copy-status")).to_have_text("copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    thread = r"\(7f1c\)\.md:\d+ https://www\.perplexity\.ai/search/proofing-sourdough-in-the-fridge-7f1c$"
    assert re.search(r"^\[\d+\] Proofing sourdough in the fridge — /.+" + thread, copied, re.MULTILINE), (
        copied
    )


@pytest.mark.parametrize("width_name", list(WIDTHS))
def test_search_highlights_matches_and_its_filters_narrow_the_results(
    browser: Browser, stack: Stack, width_name: str
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS[width_name])
    page.click("#tab-search")
    page.fill("#search-query", "rye flour")
    page.select_option("#search-mode", "exact")
    page.select_option("#search-filters [data-filter=kind]", "markdown")
    page.click("#search")
    expect(page.locator("#results li").first).to_contain_text("sourdough.md")
    expect(page.locator("#results li mark").first).to_have_text(re.compile("rye", re.IGNORECASE))
    expect(page.locator("#search-summary")).to_contain_text("exact")
    assert no_sideways_scroll(page)
    screenshot(page, f"search-{width_name}")

    page.select_option("#search-filters [data-filter=kind]", "pdf")
    page.click("#search")
    expect(page.locator("#search-summary")).to_contain_text("0 passages")
    expect(page.locator("#results li")).to_have_count(0)


def test_library_indexes_watches_and_shows_a_failed_file_as_failed(browser: Browser, stack: Stack) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    broken = str(stack.library / "broken")
    page.fill("#index-root", broken)
    page.check("#index-watch")
    page.click("#index-start")
    expect(page.locator("#index-status")).to_contain_text("indexed with 1 failed", timeout=60_000)
    expect(page.locator("#index-status")).to_have_class(re.compile("failed"))
    folder = page.locator(f"#folders li[data-root='{broken}']")
    expect(folder).to_contain_text("0 documents · 1 failed · last sync")
    expect(folder).to_contain_text("kept in sync")
    expect(folder).to_contain_text("scan.pdf: corrupt PDF")
    notes = page.locator(f"#folders li[data-root='{stack.library / 'samples' / 'notes'}']")
    expect(notes).to_contain_text("2 documents")
    screenshot(page, "library-desktop")

    folder.get_by_role("button", name="Stop watching").click()
    expect(page.locator(f"#folders li[data-root='{broken}']")).to_contain_text("not watched")
    page.locator(f"#folders li[data-root='{broken}']").get_by_role("button", name="Remove from list").click()
    expect(page.locator(f"#folders li[data-root='{broken}']")).to_have_count(0)


def test_dark_mode_follows_the_system(browser: Browser, stack: Stack) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"], dark=True)
    ask(page, QUESTION)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(17, 22, 27)", background
    screenshot(page, "dark-phone")


def test_a_question_with_no_worker_to_take_it_is_refused_at_once(
    browser: Browser, workerless_gateway: Stack
) -> None:
    gateway = workerless_gateway
    page = open_page(browser, f"{gateway.url}/#key={gateway.key}", WIDTHS["phone"])
    page.fill("#question", QUESTION)
    page.click("#ask")
    error = page.locator("#ask-error")
    expect(error).to_contain_text(
        NO_WORKER,
        timeout=15_000,
    )
    expect(error).to_contain_text("hindsight up")
    expect(page.locator("#ask")).to_be_enabled()
    screenshot(page, "no-worker-phone")


def test_a_question_waiting_for_a_worker_says_so_and_can_be_cancelled(
    browser: Browser, queueing_gateway: Stack
) -> None:
    gateway = queueing_gateway
    page = open_page(browser, f"{gateway.url}/#key={gateway.key}", WIDTHS["desktop"])
    page.fill("#question", QUESTION)
    page.click("#ask")
    line = page.locator("#stage-line")
    expect(line).to_contain_text(
        "waiting for a worker: no live worker for the retrieve, rerank", timeout=40_000
    )
    screenshot(page, "waiting-desktop")
    page.click("#cancel")
    expect(page.locator("#ask-error")).to_contain_text("cancelled by the person who asked")
    expect(page.locator("#ask")).to_be_enabled()
    expect(page.locator("#cancel")).to_be_hidden()
    # A cancelled question is removed (DELETE): it leaves the history.
    expect(page.locator("#history li").first).to_contain_text("no questions yet")


def test_slash_puts_the_cursor_in_the_question_box_but_types_a_slash_in_a_field(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    page.locator("h1").first.click()
    page.keyboard.press("/")
    expect(page.locator("#question")).to_be_focused()
    expect(page.locator("#question")).to_have_value("")
    page.keyboard.type("rye/wheat")
    expect(page.locator("#question")).to_have_value("rye/wheat")


def test_a_wrong_key_is_reported_as_soon_as_the_page_opens(browser: Browser, stack: Stack) -> None:
    page = open_page(browser, f"{stack.url}/#key=hs_not-a-valid-key", WIDTHS["desktop"])
    banner = page.locator("#key-problem")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("The API key was refused")
    screenshot(page, "wrong-key-desktop")


def test_a_follow_up_is_answered_under_its_thread_and_the_permalink_reopens_the_conversation(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    ask(page, QUESTION)
    page.fill("#follow-up", FOLLOW_UP)
    page.click("#follow-up-ask")
    expect(page.locator("#answer-question")).to_have_text(FOLLOW_UP)
    page.wait_for_selector("#answer a.cite", timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator("#answer")).to_contain_text("gets fed every Sunday")
    page.locator("#answer a.cite").first.click()  # the follow-up's own [1]: the feeding line, verified
    expect(page.locator("#evidence mark")).to_contain_text("gets fed every Sunday")
    expect(page.locator("#evidence p.muted").first).to_contain_text(
        f"{stack.library}/samples/notes/sourdough.md:3"
    )
    expect(page.locator("#searched-for")).to_have_text(
        "Searched for: How often is it fed? (sourdough starter called)"
    )
    expect(page.locator("#thread h3")).to_have_text([QUESTION])
    expect(page.locator("#thread")).to_contain_text("Clint")
    page.locator("#thread a.cite").first.click()  # the first turn keeps its own citations
    expect(page.locator("#evidence mark")).to_contain_text("My starter is called Clint")
    screenshot(page, "follow-up-thread")

    permalink = page.locator("#permalink").get_attribute("href")
    assert permalink and permalink.startswith("#c=")
    again = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"])
    again.goto(f"{stack.url}/{permalink}")
    again.reload()
    expect(again.locator("#thread h3")).to_have_text([QUESTION])
    expect(again.locator("#answer-question")).to_have_text(FOLLOW_UP)
    expect(again.locator("#answer")).to_contain_text("gets fed every Sunday")
    assert no_sideways_scroll(again)
    screenshot(again, "follow-up-permalink-phone")


def test_save_as_note_writes_the_answer_with_links_to_the_cited_lines(browser: Browser, stack: Stack) -> None:
    folder = stack.library / "saved-answers"
    folder.mkdir(exist_ok=True)
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    ask(page, QUESTION)
    page.fill("#note-folder", str(folder))
    page.click("#save-note")
    expect(page.locator("#copy-status")).to_contain_text(
        f"saved as {folder}/What is my sourdough starter called_ ("
    )
    [note] = folder.glob("*.md")
    text = note.read_text()
    assert text.startswith('---\ntitle: "What is my sourdough starter called?"\n')
    assert text.endswith("\n[1]: <../samples/notes/sourdough.md#L3>\n")  # what the body's [1] links to
    assert (
        "1. [Sourdough notes — " in text
        and "sourdough.md:3](../samples/notes/sourdough.md#L3) (quote found in file)" in text
    )


def test_a_how_to_answer_shows_the_command_as_a_code_block(browser: Browser, stack: Stack) -> None:
    # jq's README from Debian's jq package (tests/fixtures/howto/SOURCES.md), indexed as Markdown.
    folder = stack.library / "howto"
    folder.mkdir()
    shutil.copyfile(REPO / "tests" / "fixtures" / "howto" / "jq-README", folder / "jq-README.md")
    run_hindsight(stack.env, "index", str(folder))
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"])

    ask(page, "How do I build jq from source?")

    code = page.locator("#answer pre code").first
    expect(code).to_contain_text("make")
    assert "```" not in page.locator("#answer").inner_text()
    expect(page.locator("#answer a.cite").first).to_have_text("[1]")
    screenshot(page, "how-to-answer-phone")
    assert no_sideways_scroll(page)


def test_the_library_panel_checks_the_perplexity_export_folder(browser: Browser, stack: Stack) -> None:
    exports = Path(stack.env["HINDSIGHT_DATA_DIR"]) / "exports"
    source = data_export(exports.parent / "perplexity-data-request.json")
    write_threads(threads_from_data_export(source, "https://www.perplexity.ai", 1_000_000), exports)
    (exports / "General" / "Broken.md").write_text("no front matter\n")
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"])

    page.click("#perplexity-check-start")

    expect(page.locator("#perplexity-check-summary")).to_have_text(
        "2 threads: 2 imported · turns as the site reported them: 2 of 2 · "
        "files that did not read as a thread: 1",
        timeout=60_000,
    )
    expect(page.locator("#perplexity-check-issues li")).to_have_text(
        ["General/Broken.md: no Perplexity front matter (`source: perplexity`)"]
    )
    assert no_sideways_scroll(page)
    screenshot(page, "perplexity-library-check-phone")


def test_a_permalink_opened_in_a_browser_without_the_key_shows_its_answer_once_the_key_is_entered(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    ask(page, QUESTION)
    permalink = page.locator("#permalink").get_attribute("href")
    assert permalink

    fresh = open_page(browser, f"{stack.url}/{permalink}", WIDTHS["desktop"])  # a profile with no key
    expect(fresh.locator("#key-problem")).to_be_visible()
    fresh.fill("#api-key", stack.key)
    fresh.locator("#api-key").dispatch_event("change")
    expect(fresh.locator("#key-problem")).to_be_hidden()
    expect(fresh.locator("#answer-question")).to_have_text(QUESTION)
    expect(fresh.locator("#answer a.cite").first).to_be_visible()


TAPPED = ["#tab-ask", "#tab-search", "#ask", "#filters-toggle", "#key-toggle", "#copy", "#permalink",
          "#history li a", "#history .erase", "#history-search", "#index-start", "label.inline",
          "#sources li"]  # fmt: skip


def test_at_phone_width_every_control_is_44_px_tall_and_the_set_key_folds_away(
    browser: Browser, stack: Stack
) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"])
    ask(page, QUESTION)
    short = {}
    for selector in TAPPED:
        target = page.locator(selector).first
        expect(target, f"{selector} is shown").to_be_visible()
        box = target.bounding_box()
        assert box
        if box["height"] < 44:
            short[selector] = box["height"]
    assert not short, f"controls under 44 px tall at 390 px: {short}"
    checkbox = page.locator("#index-watch").bounding_box()
    assert checkbox and checkbox["width"] >= 24 and checkbox["height"] >= 24
    expect(page.locator("#api-key")).to_be_hidden()  # the key is set: one button instead of the field
    answer = page.locator("#answer").bounding_box()
    assert answer and answer["y"] < 844 / 2, answer  # the answer starts in the top half of a phone's screen
    page.click("#key-toggle")
    expect(page.locator("#api-key")).to_be_visible()
    page.click("#filters-toggle")
    expect(page.locator("#ask-filters")).to_be_visible()
    screenshot(page, "phone-controls")


def test_at_desktop_width_the_key_field_and_filters_stay_in_view(browser: Browser, stack: Stack) -> None:
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])
    expect(page.locator("#api-key")).to_be_visible()
    expect(page.locator("#ask-filters")).to_be_visible()
    expect(page.locator("#key-toggle")).to_be_hidden()
    expect(page.locator("#filters-toggle")).to_be_hidden()


def asked_through_the_api(stack: Stack, question: str) -> str:
    """Ask through the API and wait for the answer; the conversation's id."""
    with stack.client() as http:
        accepted = http.post("/v1/questions", json={"question": question}).json()
        with http.stream("GET", accepted["events_url"], timeout=120) as events:
            for line in events.iter_lines():
                if '"stage":"answer"' in line.replace(" ", "") and '"status":"progress"' not in line:
                    break
        assert http.get(accepted["status_url"]).json()["status"] == "done"
    return str(accepted["conversation_id"])


def test_past_questions_are_searched_and_a_deleted_conversation_is_gone_with_its_answer(
    browser: Browser, stack: Stack
) -> None:
    kept = asked_through_the_api(stack, "How warm should the proofing fridge be?")
    erased = asked_through_the_api(stack, "Which flour feeds the starter?")
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["phone"])
    page.fill("#history-search", "FLOUR")
    expect(page.locator("#history li a")).to_have_text(["Which flour feeds the starter?"])
    page.on("dialog", lambda dialog: dialog.accept())
    page.locator("#history li", has_text="Which flour").get_by_role("button").click()
    expect(page.locator("#history li")).to_have_text(["no question matches"])
    page.fill("#history-search", "")
    expect(page.locator("#history li a", has_text="proofing fridge")).to_be_visible()
    with stack.client() as http:
        assert http.get(f"/v1/conversations/{erased}").status_code == 404
        assert http.get(f"/v1/questions/{erased}/citations/1").status_code == 404  # the answer went too
        assert http.get(f"/v1/conversations/{kept}").status_code == 200
        assert http.delete(f"/v1/conversations/{erased}").status_code == 404
        assert [q["id"] for q in http.get("/v1/questions", params={"q": "fridge be"}).json()] == [kept]


def test_a_windows_1252_notes_evidence_shows_its_accents_and_says_it_was_decoded_as_windows_1252(
    browser: Browser, stack: Stack
) -> None:
    folder = stack.library / "latin"  # a French kitchen note saved as older Windows editors save Latin-1
    folder.mkdir()
    (folder / "carnet.txt").write_bytes(
        "Carnet de cuisine de Noël\n\n"
        "La crème brûlée du réveillon cuit au bain-marie à 150 °C pendant 45 minutes.\n"
        "On la caramélise au chalumeau juste avant de servir, avec de la cassonade.\n".encode("cp1252")
    )
    run_hindsight(stack.env, "index", str(folder))
    page = open_page(browser, f"{stack.url}/#key={stack.key}", WIDTHS["desktop"])

    ask(page, "How long does the crème brûlée cook in the bain-marie?")
    page.locator("#sources li.cited", has_text="carnet.txt").first.click()

    place = page.locator("#evidence p.muted").first
    expect(place).to_contain_text(f"{folder / 'carnet.txt'}:")
    expect(place).to_contain_text("decoded as Windows-1252")
    expect(page.locator("#evidence pre")).to_contain_text("La crème brûlée du réveillon")
    screenshot(page, "windows-1252-evidence-desktop")
