"""The answer-quality bench's own rules: what counts as a fragment, and the documented corpus subset."""

from __future__ import annotations

from bench.answer_quality import quote_is_whole, subset, whole_sentence
from bench.retrieval_quality import Dataset

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
