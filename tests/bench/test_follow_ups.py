"""The follow-up bench's pairs (``bench/follow_ups.py``) on the committed zsh-faq set: each follow-up
points back with "it", names a word of its question's relevant document that the question lacks,
and that word occurs in other documents too, so alone it does not single the document out."""

from __future__ import annotations

from bench.follow_ups import follow_up_pairs, words_of
from bench.retrieval_quality import load_dataset
from services.retriever.keywords import content_words
from tests.conftest import REPO


def test_follow_ups_name_a_shared_word_of_the_relevant_document_that_the_question_lacks() -> None:
    dataset = load_dataset(REPO / "bench" / "sets" / "zsh-faq")
    pairs = follow_up_pairs(dataset, max_df=20)
    assert len(pairs) == len(dataset.queries) == 55
    by_query = {p.query_id: p for p in pairs}
    vocabularies = [set(words_of(doc["text"])) for doc in dataset.corpus.values()]
    for pair in pairs:
        term = pair.follow_up.removeprefix("What does it say about ").removesuffix("?")
        document = min(d for d, grade in dataset.qrels[pair.query_id].items() if grade > 0)
        assert term in words_of(dataset.corpus[document]["text"])
        assert term not in content_words(pair.question)
        sharing = sum(term in words for words in vocabularies)
        assert 2 <= sharing <= 20
    startup = next(p for p in pairs if p.question.startswith("In which startup file"))
    assert by_query[startup.query_id].follow_up == "What does it say about zshenv?"
