"""Answer quality through the running services: every question of a BEIR folder asked over HTTP.

Writes the corpus as Markdown files (title in front matter) and indexes them once with the product's
indexer (cached like ``retrieval_quality.py``), then starts the local stack (``hindsight up``: Redis,
Celery workers as processes, the gateway) on free ports over that index and asks each question as
``hindsight ask`` does. Run from the repository root:

    PYTHONPATH=. python bench/answer_quality.py bench/sets/debian-faq
    PYTHONPATH=. python bench/answer_quality.py ../shared/eval/pyfaq-dev --limit 40
    PYTHONPATH=. python bench/answer_quality.py bench/sets/debian-faq --llm llama-cpp --limit 10
    PYTHONPATH=. python bench/answer_quality.py bench/sets/zsh-faq --how-to   # the how-to subset only

What each column means (per question, then averaged; citations pooled for precision):

- ``first``: citation [1] is from a qrels-relevant document; ``any``: some citation is; ``prec``:
  share of all citations that are. ``P@1``/``P@3``: the same for the documents of the candidate list
  the synthesizer received (``Answer.sources_explored``, in rank order), so the table shows whether
  synthesis keeps the retriever's ranking.
- ``frag``: share of answer sentences that are fragments. A sentence is whole when it ends with
  ".", "!" or "?" (closing quotes or brackets allowed), its last word is not an article or a
  conjunction ("a", "the", "and": a line cut short), and — for an extractive answer — its cited
  quote starts at the start of a sentence and ends at the end of one in the file's own
  segmentation (``services.synthesizer.segmentation``).
- ``verb``: share of citations whose quote equals the cited file's characters at
  ``char_start:char_end`` (read here, independently of the answer's ``verified``); ``line``: share
  whose ``line`` is the line of ``char_start`` in that file.
- ``none``: answers that said nothing was found; ``failed``: questions that ended failed (a stage's
  time limit), left out of every other column.
- ``p50``/``p95``: seconds from asking to the answer; ``syn50``/``syn95``: seconds from the rerank
  event to the answer (the synthesizer's whole stage, queue hops included); ``words``: mean answer
  length in words.
- ``how-to``: the questions whose answer is a command, by rule: a how-to question
  (``command_blocks.is_how_to``: "How do I/can I/to …", "command to …") whose relevant section holds
  a code block or command (the blocks ``command_blocks.introduced_blocks`` finds in the section as
  written); ``cmd``: the share of them whose answer cites a quote containing one of those blocks whole;
  ``cmd|rel``: the same among those whose first citation is relevant (synthesis apart from ranking).
  A quote that ends with a block counts as whole when it starts where a sentence does.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.question_paths import private_stack_settings, service_stack
from bench.retrieval_quality import Dataset, IndexedCorpus, index_corpus, load_dataset
from cli.client import GatewayClient
from cli.local_key import client_key
from services.synthesizer.command_blocks import introduced_blocks, is_how_to
from services.synthesizer.segmentation import segment
from shared.backends import create_embedder
from shared.contracts import Answer
from shared.embedding import OnnxEmbedder
from shared.markdown_source import split_front_matter
from shared.settings import Settings

MARKER = re.compile(r"\s*\[\d+\]")
DANGLING = frozenset(["a", "an", "the", "and", "or", "but"])  # English ends sentences with "with", not "the"
SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")


@dataclass(frozen=True)
class Options:
    shown: bool = False
    how_to_only: bool = False


@dataclass
class Scores:
    first: list[bool] = field(default_factory=list)
    any: list[bool] = field(default_factory=list)
    cited_relevant: int = 0
    cited: int = 0
    p1: list[float] = field(default_factory=list)
    p3: list[float] = field(default_factory=list)
    sentences: int = 0
    fragments: int = 0
    verbatim: int = 0
    right_line: int = 0
    latency: list[float] = field(default_factory=list)
    synthesis: list[float] = field(default_factory=list)
    words: list[int] = field(default_factory=list)
    nothing_found: int = 0
    failed: int = 0
    command_quoted: list[bool] = field(default_factory=list)
    command_when_relevant: list[bool] = field(default_factory=list)


def whole_sentence(text: str) -> bool:
    words = MARKER.sub("", text).split()
    if not words or SENTENCE_END.search(words[-1]) is None:
        return False
    return words[-1].rstrip(".!?\"'”’)]").lower() not in DANGLING


def quote_is_whole(file_text: str, start: int, end: int, block: bool = False) -> bool:
    """The quote starts where one of the file's sentences starts and ends where one ends, or
    (``block``, a sentence that introduces a block) where one of its introduced blocks ends."""
    body_start = split_front_matter(file_text)[1]
    body = file_text[body_start:]
    sentences = segment(body)
    starts = {body_start + s.start for s in sentences}
    ends = {body_start + s.end for s in sentences}
    blocks = {body_start + b.end for b in introduced_blocks(body, sentences)}
    return start in starts and (end in blocks if block else end in ends | blocks)


def commands_of(file_text: str) -> list[str]:
    """The code blocks and commands of a file as the bench wrote it (Markdown), each whole."""
    body = file_text[split_front_matter(file_text)[1] :]
    return [body[b.code_start : b.end] for b in introduced_blocks(body, segment(body))]


def command_quoted(answer: Answer, commands: list[str]) -> bool:
    """Some citation's quote holds one of ``commands`` whole."""
    return any(command in c.quote for c in answer.citations for command in commands)


def score_answer(
    answer: Answer, relevant: set[str], doc_of: dict[str, str], scores: Scores, commands: list[str]
) -> None:
    cited = [doc_of.get(Path(c.source_uri).name, "") for c in answer.citations]
    scores.first.append(bool(cited) and cited[0] in relevant)
    if commands:
        scores.command_quoted.append(command_quoted(answer, commands))
        if scores.first[-1]:
            scores.command_when_relevant.append(scores.command_quoted[-1])
    scores.any.append(any(d in relevant for d in cited))
    scores.cited += len(cited)
    scores.cited_relevant += sum(d in relevant for d in cited)
    ranked = [doc_of.get(Path(s.source_uri).name, "") for s in answer.sources_explored]
    scores.p1.append(float(bool(ranked) and ranked[0] in relevant))
    scores.p3.append(sum(d in relevant for d in ranked[:3]) / 3)
    scores.words.append(len(answer.markdown.split()))
    scores.nothing_found += not answer.citations
    by_number = {c.number: c for c in answer.citations}
    for verdict in (v for v in answer.verdicts if v.action != "removed"):
        scores.sentences += 1
        # An extractive sentence ending with ":" introduces the block its quote ends with.
        block = answer.mode == "extractive" and verdict.sentence.endswith(":")
        whole = block or whole_sentence(verdict.sentence)
        if answer.mode == "extractive":
            for number in verdict.citations:
                c = by_number[number]
                text = Path(c.source_uri).read_text()
                whole = whole and quote_is_whole(text, c.char_start, c.char_end, block)
        scores.fragments += not whole
        if not whole:
            print(f"    fragment: {verdict.sentence!r}")
    for c in answer.citations:
        text = Path(c.source_uri).read_text()
        scores.verbatim += text[c.char_start : c.char_end] == c.quote
        scores.right_line += c.line == text.count("\n", 0, c.char_start) + 1


def subset(dataset: Dataset, documents: int) -> Dataset:
    """The judged documents, then the others in id order, ``documents`` in all (0 = every one)."""
    if not documents:
        return dataset
    judged = {doc for relevant in dataset.qrels.values() for doc in relevant}
    others = [doc for doc in sorted(dataset.corpus) if doc not in judged]
    kept = sorted(judged) + others[: max(0, documents - len(judged))]
    digest = hashlib.sha256(f"{dataset.digest}:{documents}".encode()).hexdigest()
    return Dataset({doc: dataset.corpus[doc] for doc in kept}, dataset.queries, dataset.qrels, digest)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))] if ordered else 0.0


def gold_commands(dataset: Dataset, query_id: str, files: Path, file_to_id: dict[str, str]) -> list[str]:
    """The commands that answer a how-to question: those of its relevant sections (none otherwise)."""
    if not is_how_to(dataset.queries[query_id]):
        return []
    relevant = set(dataset.qrels[query_id])
    return [
        command
        for name, doc in sorted(file_to_id.items())
        if doc in relevant
        for command in commands_of((files / name).read_text())
    ]


def ask(client: GatewayClient, question: str) -> tuple[Answer, float, float]:
    started = time.perf_counter()
    events = list(client.question_events(client.ask(question)))
    wall = time.perf_counter() - started
    last = events[-1]
    if last.stage != "answer" or last.status != "done":
        raise RuntimeError(f"{question!r}: {last.stage} {last.status}: {last.detail}")
    reranked = next(e.ts for e in events if e.stage == "rerank" and e.status in ("done", "skipped"))
    return Answer.model_validate(last.data["answer"]), wall, last.ts - reranked


def show(answer: Answer, commands: list[str]) -> None:
    print("    " + " ".join(answer.markdown.split())[:400])
    for c in answer.citations:
        print(f"    [{c.number}] {Path(c.source_uri).name}:{c.line}")
    if commands:
        print(f"    command quoted: {'yes' if command_quoted(answer, commands) else 'no'}")


@contextmanager
def running_over(
    dataset: Dataset, llm: str, cache: Path, models: Path | None
) -> Iterator[tuple[GatewayClient, IndexedCorpus]]:
    """The local stack over a copy of the dataset's cached index, with a client far above the
    per-key rate limit (one client asks every question back to back)."""
    base = Settings(models_dir=models) if models else Settings()
    embedder = create_embedder(base)
    assert isinstance(embedder, OnnxEmbedder)
    indexed = index_corpus(dataset, cache, embedder, base)
    data_dir = Path(tempfile.mkdtemp(prefix="answer-quality-"))
    shutil.copytree(indexed.folder / "store", data_dir / "store")
    settings = private_stack_settings(base, data_dir, models_dir=base.models_dir, llm=llm)
    extra_env = {"HINDSIGHT_LLM": llm, "HINDSIGHT_RATE_LIMIT_PER_MINUTE": "1000000"}
    try:
        with service_stack(settings, extra_env):
            # An LLM's map can run minutes between two events: a client that waits for them.
            yield GatewayClient(settings.gateway.gateway_url, client_key(settings), timeout_s=600), indexed
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def run(
    dataset: Dataset, query_ids: list[str], llm: str, cache: Path, models: Path | None, options: Options
) -> Scores:
    scores = Scores()
    with running_over(dataset, llm, cache, models) as (client, indexed):
        files = indexed.folder / "files"
        commands = {q: gold_commands(dataset, q, files, indexed.file_to_id) for q in query_ids}
        if options.how_to_only:
            query_ids = [q for q in query_ids if commands[q]]
        for number, query_id in enumerate(query_ids, start=1):
            try:
                answer, wall, synthesis = ask(client, dataset.queries[query_id])
            except RuntimeError as exc:  # the question failed (a stage's time limit): counted, not scored
                scores.failed += 1
                print(f"  {number}/{len(query_ids)} failed: {exc}", flush=True)
                continue
            scores.latency.append(wall)
            scores.synthesis.append(synthesis)
            relevant = set(dataset.qrels[query_id])
            score_answer(answer, relevant, indexed.file_to_id, scores, commands[query_id])
            print(f"  {number}/{len(query_ids)} {wall:.1f}s {dataset.queries[query_id][:60]!r}", flush=True)
            if options.shown:
                show(answer, commands[query_id])
    return scores


def share(flags: list[bool]) -> str:
    return f"{statistics.mean(flags):.3f}" if flags else "-"


def print_table(label: str, scores: Scores) -> None:
    n = len(scores.first)
    if not n:
        print(f"{label}: no question answered ({scores.failed} failed)")
        return
    cells = {
        "config": label,
        "n": str(n),
        "first": f"{statistics.mean(scores.first):.3f}",
        "any": f"{statistics.mean(scores.any):.3f}",
        "prec": f"{scores.cited_relevant / max(scores.cited, 1):.3f}",
        "P@1": f"{statistics.mean(scores.p1):.3f}",
        "P@3": f"{statistics.mean(scores.p3):.3f}",
        "frag": f"{scores.fragments / max(scores.sentences, 1):.3f}",
        "verb": f"{scores.verbatim / max(scores.cited, 1):.3f}",
        "line": f"{scores.right_line / max(scores.cited, 1):.3f}",
        "p50": f"{percentile(scores.latency, 0.5):.2f}",
        "p95": f"{percentile(scores.latency, 0.95):.2f}",
        "syn50": f"{percentile(scores.synthesis, 0.5):.2f}",
        "syn95": f"{percentile(scores.synthesis, 0.95):.2f}",
        "words": f"{statistics.mean(scores.words):.0f}",
        "none": str(scores.nothing_found),
        "failed": str(scores.failed),
        "how-to": str(len(scores.command_quoted)),
        "cmd": share(scores.command_quoted),
        "cmd|rel": share(scores.command_when_relevant),
    }
    print("| " + " | ".join(cells) + " |")
    print("|" + "---|" * len(cells))
    print("| " + " | ".join(cells.values()) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="BEIR folder: corpus.jsonl, queries.jsonl, qrels.tsv")
    parser.add_argument("--llm", default="none", help="none (extractive) or a configured LLM backend")
    parser.add_argument("--limit", type=int, default=0, help="ask only the first N questions (0 = all)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(os.environ.get("HINDSIGHT_BENCH_CACHE", "/tmp/hindsight-bench")),
    )
    parser.add_argument(
        "--documents",
        type=int,
        default=0,
        help="index only the judged documents plus others up to N (0 = all)",
    )
    parser.add_argument(
        "--questions-from",
        type=Path,
        default=None,
        help="ask another BEIR folder's questions instead, which this corpus does not answer: "
        "'none' counts the answers that rightly say nothing was found, 'first' must be 0",
    )
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--show", action="store_true", help="print each answer and its path:line citations")
    parser.add_argument("--how-to", action="store_true", help="ask only the how-to subset (see how-to above)")
    args = parser.parse_args()
    dataset = subset(load_dataset(args.dataset), args.documents)
    label = f"{args.dataset.name} {args.llm}"
    if args.questions_from:
        foreign = load_dataset(args.questions_from)
        dataset = Dataset(dataset.corpus, foreign.queries, {q: {} for q in foreign.queries}, dataset.digest)
        label += f", questions of {args.questions_from.name}"
    query_ids = sorted(dataset.queries)[: args.limit or None]
    print(f"{label}: {len(dataset.corpus)} documents, {len(query_ids)} questions")
    options = Options(shown=args.show, how_to_only=args.how_to)
    scores = run(dataset, query_ids, args.llm, args.cache_dir, args.models_dir, options)
    print_table(label, scores)


if __name__ == "__main__":
    main()
