"""Follow-ups through the running services: is a question that only makes sense after another answered
from the right document when it is asked in that conversation, and when it is asked alone?

Pairs come from a BEIR folder: the first question is one of its queries; the follow-up is written
from that query's relevant document, "What does it say about <term>?", where the term is the word of
the document that best singles it out among the words the question does not already use (highest
tf × idf) while still occurring in other documents (document frequency 2 to ``--max-df``), so the
follow-up alone names a topic several documents share and the "it" needs the first question. Each
pair is asked twice through the gateway, as ``hindsight ask`` does: the follow-up alone, and the
first question then the follow-up in its conversation. Run from the repository root:

    PYTHONPATH=. python bench/follow_ups.py bench/sets/zsh-faq bench/sets/r-faq

Columns (per follow-up, then averaged): ``first``: citation [1] is from a document relevant to the
first question (the one the follow-up was written from); ``any``: some citation is; ``P@1``: the
first document the synthesizer received is; ``none``: answers that found nothing. ``question`` is the
first question itself, for reference.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.answer_quality import running_over
from bench.retrieval_quality import Dataset, load_dataset
from cli.client import GatewayClient
from services.retriever.keywords import WORD, content_words
from shared.contracts import Answer


@dataclass(frozen=True)
class Pair:
    query_id: str
    question: str
    follow_up: str


@dataclass
class Relevance:
    first: list[bool] = field(default_factory=list)
    any: list[bool] = field(default_factory=list)
    p1: list[bool] = field(default_factory=list)
    nothing_found: int = 0

    def add(self, answer: Answer, relevant: set[str], doc_of: dict[str, str]) -> None:
        cited = [doc_of.get(Path(c.source_uri).name, "") for c in answer.citations]
        ranked = [doc_of.get(Path(s.source_uri).name, "") for s in answer.sources_explored]
        self.first.append(bool(cited) and cited[0] in relevant)
        self.any.append(any(d in relevant for d in cited))
        self.p1.append(bool(ranked) and ranked[0] in relevant)
        self.nothing_found += not answer.citations


def words_of(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text) if w.isalpha() and len(w) >= 4]


def follow_up_pairs(dataset: Dataset, max_df: int) -> list[Pair]:
    """One pair per query with a relevant document that has a term fit to follow up on."""
    df = Counter(word for doc in dataset.corpus.values() for word in set(words_of(doc["text"])))
    total = len(dataset.corpus)
    pairs = []
    for query_id in sorted(dataset.queries):
        relevant = sorted(d for d, grade in dataset.qrels.get(query_id, {}).items() if grade > 0)
        if not relevant or relevant[0] not in dataset.corpus:
            continue
        question = dataset.queries[query_id]
        asked = set(content_words(question))
        tf = Counter(words_of(dataset.corpus[relevant[0]]["text"]))
        fit = [
            (n * math.log(total / df[w]), w) for w, n in tf.items() if w not in asked and 2 <= df[w] <= max_df
        ]
        if fit:
            term = max(fit)[1]
            pairs.append(Pair(query_id, question, f"What does it say about {term}?"))
    return pairs


def answer_of(client: GatewayClient, question: str, conversation_id: str | None = None) -> tuple[Answer, str]:
    accepted = client.submit(question, conversation_id=conversation_id)
    events = list(client.question_events(accepted.id))
    last = events[-1]
    if last.stage != "answer" or last.status != "done":
        raise RuntimeError(f"{question!r}: {last.stage} {last.status}: {last.detail}")
    return Answer.model_validate(last.data["answer"]), accepted.conversation_id


def run(dataset: Dataset, pairs: list[Pair], cache: Path, shown: bool) -> dict[str, Relevance]:
    rows = {"question": Relevance(), "follow-up alone": Relevance(), "follow-up in conversation": Relevance()}
    with running_over(dataset, "none", cache, None) as (client, indexed):
        for number, pair in enumerate(pairs, start=1):
            relevant = set(dataset.qrels[pair.query_id])
            alone, _ = answer_of(client, pair.follow_up)
            first, conversation = answer_of(client, pair.question)
            followed, _ = answer_of(client, pair.follow_up, conversation)
            for label, answer in zip(rows, (first, alone, followed), strict=True):
                rows[label].add(answer, relevant, indexed.file_to_id)
            print(f"  {number}/{len(pairs)} {pair.question[:50]!r} → {pair.follow_up!r}", flush=True)
            if shown:
                print(f"    searched for: {followed.question!r}")
    return rows


def print_rows(name: str, rows: dict[str, Relevance]) -> None:
    print("| set | asked | n | first | any | P@1 | none |")
    print("|---|---|---|---|---|---|---|")
    for label, r in rows.items():
        cells = [statistics.mean(r.first), statistics.mean(r.any), statistics.mean(r.p1)]
        shown = " | ".join(f"{c:.3f}" for c in cells)
        print(f"| {name} | {label} | {len(r.first)} | {shown} | {r.nothing_found} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", type=Path, nargs="+", help="BEIR folders")
    parser.add_argument("--limit", type=int, default=0, help="the first N pairs of each set (0 = all)")
    parser.add_argument(
        "--max-df", type=int, default=20, help="most documents the follow-up's term may occur in"
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("HINDSIGHT_BENCH_CACHE", "/tmp/hindsight-bench")),
    )
    parser.add_argument("--show", action="store_true", help="print what each follow-up searched for")
    args = parser.parse_args()
    for folder in args.datasets:
        dataset = load_dataset(folder)
        pairs = follow_up_pairs(dataset, args.max_df)[: args.limit or None]
        print(f"{folder.name}: {len(dataset.corpus)} documents, {len(pairs)} pairs")
        print_rows(folder.name, run(dataset, pairs, args.cache_dir, args.show))


if __name__ == "__main__":
    main()
