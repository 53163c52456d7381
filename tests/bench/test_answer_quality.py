"""The answer-quality bench's own rules: what counts as a fragment, the documented corpus subset, and
which answers quote the command a how-to question asks for."""

from __future__ import annotations

from bench.answer_quality import command_quoted, commands_of, quote_is_whole, subset, whole_sentence
from bench.retrieval_quality import Dataset
from shared.contracts import Answer, Citation

FILE = (
    "---\ntitle: FAQ\n---\n\n"
    "Debian is the result of a volunteer effort to create a\nfree system. It is free.\n"
)


def test_a_sentence_cut_at_a_line_end_or_before_a_list_is_a_fragment() -> None:
    assert whole_sentence("Debian GNU/Linux is the result of a volunteer effort [1].")
    assert not whole_sentence("Debian GNU/Linux is the result of a volunteer effort to create a [1].")
    assert not whole_sentence("Like most Linux distributions, Debian GNU/Linux provides: [2]")
    assert not whole_sentence("Debian GNU/Linux provides a")
    assert whole_sentence("the minor version number of the Python release you're working with [1].")


def test_a_quote_is_whole_only_from_a_sentence_start_to_a_sentence_end_of_the_file() -> None:
    start = FILE.index("Debian")
    end = FILE.index("free system.") + len("free system.")

    assert quote_is_whole(FILE, start, end)
    assert quote_is_whole(FILE, start, FILE.index("It is free.") + len("It is free."))
    assert not quote_is_whole(FILE, start, FILE.index(" to create a"))
    assert not quote_is_whole(FILE, start - 1, end)


def test_the_subset_keeps_every_judged_document_then_others_in_id_order() -> None:
    corpus = {f"d{i}": {"_id": f"d{i}", "title": "", "text": "x"} for i in range(6)}
    dataset = Dataset(corpus, {"q": "?"}, {"q": {"d5": 1}}, "digest")

    kept = subset(dataset, 3)

    assert sorted(kept.corpus) == ["d0", "d1", "d5"]
    assert kept.digest != dataset.digest
    assert subset(dataset, 0) is dataset


HOW_TO_FILE = (  # the Debian FAQ's section 8.1 (bench/sets/debian-faq, debian-faq#100) as the bench writes it
    "---\ntitle: FAQ\n---\n\n"
    "To list all the files provided by the installed package foo\nexecute the command\n\n"
    "dpkg --listfiles foo\n\n"
    "Note that the files created by the installation scripts aren't\ndisplayed.\n"
)


def answer_quoting(quote: str) -> Answer:
    citation = Citation(
        number=1,
        document_id="d",
        chunk_id="d:0",
        title="FAQ",
        source_uri="/x.md",
        char_start=0,
        char_end=1,
        quote=quote,
    )
    return Answer(question_id="q", question="?", markdown="", citations=[citation])


def test_a_how_to_answer_counts_only_when_a_quote_holds_the_sections_command_whole() -> None:
    commands = commands_of(HOW_TO_FILE)
    introduction = "To list all the files provided by the installed package foo\nexecute the command"

    assert commands == ["dpkg --listfiles foo"]
    assert command_quoted(answer_quoting(f"{introduction}\n\ndpkg --listfiles foo"), commands)
    note = "Note that the files created by the installation scripts"
    assert not command_quoted(answer_quoting(note), commands)


def test_a_quote_ending_with_a_block_is_whole_only_where_the_block_ends() -> None:
    start = HOW_TO_FILE.index("To list")
    end = HOW_TO_FILE.index("dpkg --listfiles foo") + len("dpkg --listfiles foo")

    assert quote_is_whole(HOW_TO_FILE, start, end, block=True)
    assert not quote_is_whole(HOW_TO_FILE, start, end - 4, block=True)
    assert not quote_is_whole(HOW_TO_FILE, start, HOW_TO_FILE.index("displayed.") + 10, block=True)
