"""Corpora for the speed suite, indexed by the product's own indexer and cached on disk.

Each index is built with ``services.indexer.pipeline.sync_root`` (load, chunk, embed, write the
LanceDB store, exactly as ``hindsight index`` does in-process) into a folder under the bench cache,
keyed by the corpus, the chunking settings and the embedder; a later run reuses it, and the build
time measured when it was built is kept beside it (``build.json``).

* pyfaq: the BEIR set of ``bench/retrieval_quality.py``, one text file per document.
* documentation: the sections of BEIR folders of real documentation (``bench/sets``, pyfaq-dev), asked
  and answered as Perplexity threads rendered by the scraper's renderer: every section once, then
  remixed threads whose answers join two sections drawn at random (``documentation_threads``).
* chitchat: the ``chitchat-dataset`` package's 7,168 real conversations, rendered by the scraper's
  renderer as Perplexity-like Markdown exports (one thread per file, one ``##`` turn per exchange).
  Past the chunks the real conversations give, the corpus grows with *remixed* threads: each
  strings together real turns drawn (seeded) from random conversations, with as many turns as a
  random real conversation has. Their text is real and distinct, so each is embedded and stored
  like any other; only the pairing of turns into threads is made up.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

import lancedb

from bench.retrieval_quality import Dataset, index_corpus
from services.indexer.chunking import chunk_text
from services.indexer.loaders import load_markdown
from services.indexer.pipeline import sync_root
from services.scraper.filenames import thread_relpath
from services.scraper.markdown import render_thread
from services.scraper.models import Thread, Turn
from shared.contracts import IndexRequest
from shared.embedding import OnnxEmbedder
from shared.settings import Settings
from shared.stores.lancedb_store import CHUNKS, DOCUMENTS, LanceDBStore

BUILD_RECORD = "build.json"
THREADS_SEED = 13


@dataclass
class BuiltIndex:
    """An indexed folder, its store, and what building it cost (measured when it was built)."""

    name: str
    root: Path
    store: Path
    documents: int
    chunks: int
    build_s: float  # from an empty store to this one
    note: str = ""

    @property
    def disk_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.store.rglob("*") if p.is_file())

    @property
    def live_bytes(self) -> int:
        """The current version's data; the rest on disk is older versions LanceDB has not cleaned up."""
        database = lancedb.connect(str(self.store))
        total = 0
        for name in (CHUNKS, DOCUMENTS):
            stats: dict[str, Any] = database.open_table(name).stats()  # type: ignore[assignment]  # a dict
            total += int(stats["total_bytes"])
        return total


def index_key(corpus_digest: str, embedder: OnnxEmbedder, settings: Settings) -> str:
    chunking = f"{settings.indexing.chunk_tokens}:{settings.indexing.chunk_overlap}"
    text = f"{corpus_digest}:{chunking}:{embedder.name}:sync_root"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def index_folder(
    name: str,
    root: Path,
    store: Path,
    embedder: OnnxEmbedder,
    settings: Settings,
    base: BuiltIndex | None = None,
) -> BuiltIndex:
    """``sync_root`` the folder into the store and record the cost; with ``base``, the store starts as a
    copy of that smaller index and only ``root``'s files are added to it."""
    if base is not None:
        shutil.copytree(base.store, store, ignore=shutil.ignore_patterns(BUILD_RECORD))  # not complete yet
    scoped = settings.replace(roots=[root])
    started = time.perf_counter()
    report = sync_root(
        IndexRequest(job_id=f"bench-{name}", root=str(root)),
        LanceDBStore(store, embedder.dimension),
        embedder,
        scoped.indexing,
        scoped.data_dir,
    )
    if report.failed:
        raise RuntimeError(f"indexing {root} failed for {report.failed} files: {report.failures[:3]}")
    built = BuiltIndex(
        name=name,
        root=root,
        store=store,
        documents=len(LanceDBStore(store, embedder.dimension).manifest()),
        chunks=LanceDBStore(store, embedder.dimension).count_chunks(),
        build_s=(base.build_s if base else 0.0) + (time.perf_counter() - started),
        note=f"{base.name} build + the threads after it indexed into a copy of it" if base else "",
    )
    (store / BUILD_RECORD).write_text(json.dumps({**asdict(built), "root": str(root), "store": str(store)}))
    return built


def cached_index(store: Path) -> BuiltIndex | None:
    record = store / BUILD_RECORD
    if not record.exists():
        return None
    fields = json.loads(record.read_text())
    return BuiltIndex(**{**fields, "root": Path(fields["root"]), "store": Path(fields["store"])})


def pyfaq_index(
    dataset: Dataset, documents: int | None, cache: Path, embedder: OnnxEmbedder, settings: Settings
) -> BuiltIndex:
    """The pyfaq corpus indexed as the quality bench indexes it: all of it, or the documents relevant
    to any query plus the first ``documents`` by id (so the questions still find their answers)."""
    if documents is not None:
        relevant = {doc for judged in dataset.qrels.values() for doc in judged if doc in dataset.corpus}
        ids = sorted(relevant | set(sorted(dataset.corpus)[:documents]))
        digest = hashlib.sha256(f"{dataset.digest}:{','.join(ids)}".encode()).hexdigest()
        dataset = replace(dataset, corpus={i: dataset.corpus[i] for i in ids}, digest=digest)
    corpus = index_corpus(dataset, cache, embedder, settings)
    return BuiltIndex(
        name="pyfaq",
        root=corpus.folder / "files",
        store=corpus.folder / "store",
        documents=len(dataset.corpus),
        chunks=corpus.store.count_chunks(),
        build_s=corpus.build_s,
    )


# --- chitchat --------------------------------------------------------------------------------


def chitchat_conversations() -> tuple[dict[str, dict], str]:
    """The package's conversations by id, and a digest of its data file (read offline, from the wheel)."""
    import chitchat_dataset

    dataset = chitchat_dataset.Dataset()
    return dict(dataset), hashlib.sha256(Path(dataset.path).read_bytes()).hexdigest()


def turns_of(conversation: dict) -> list[Turn]:
    """Consecutive message groups alternate speakers: one speaker asks, the other answers."""
    groups = [[u["text"].strip() for u in group if u["text"].strip()] for group in conversation["messages"]]
    groups = [g for g in groups if g]
    return [
        Turn(question=" ".join(groups[i]), answer="\n\n".join(groups[i + 1]) if i + 1 < len(groups) else "")
        for i in range(0, len(groups), 2)
    ]


def real_thread(uuid: str, conversation: dict) -> Thread:
    turns = turns_of(conversation)
    title = conversation.get("prompt") or (turns[0].question if turns else "Chat")
    created = datetime.fromisoformat(conversation["start"].replace("Z", "+00:00"))
    return Thread(uuid=uuid, title=title, space="Chit-Chat", created=created, updated=created, turns=turns)


def remixed_threads(conversations: dict[str, dict], seed: int = 11) -> Iterator[Thread]:
    """Endless threads of real turns from random conversations, as many turns as a real thread has."""
    rng = random.Random(seed)
    threads = [turns_of(c) for c in conversations.values()]
    threads = [t for t in threads if t]
    lengths = [len(t) for t in threads]
    for n in range(10**9):
        turns = [rng.choice(rng.choice(threads)) for _ in range(rng.choice(lengths))]
        yield Thread(
            uuid=f"remix-{n:06d}", title=turns[0].question[:120], space="Chit-Chat remix", turns=turns
        )


def chitchat_threads(conversations: dict[str, dict]) -> Iterator[tuple[Thread, bool]]:
    """Every real conversation (sorted by id), then remixes; the flag says which."""
    for uuid in sorted(conversations):
        if conversations[uuid]["messages"]:
            yield real_thread(uuid, conversations[uuid]), True
    for thread in remixed_threads(conversations):
        yield thread, False


def chunk_count(markdown: str, path: Path, embedder: OnnxEmbedder, settings: Settings) -> int:
    """How many chunks the indexer will make of this file (same loader, same chunker)."""
    loaded = load_markdown(markdown, path)
    spans = chunk_text(
        loaded.text,
        embedder.token_spans,
        settings.indexing.chunk_tokens,
        settings.indexing.chunk_overlap,
        markdown=True,
    )
    return len(spans)


@dataclass
class TreePart:
    """Threads ``first`` to ``end`` (exclusive) of the deterministic sequence, written to one folder;
    the counts are cumulative from the first thread of the sequence."""

    first: int
    end: int
    chunks: int
    files: int
    real_files: int
    real_chunks: int

    def describe(self) -> str:
        return (
            f"{self.real_files} real threads ({self.real_chunks} chunks) + "
            f"{self.files - self.real_files} remixed threads ({self.chunks - self.real_chunks} chunks) "
            "of real turns"
        )


def rendered_part(
    parts: Path,
    after: TreePart | None,
    size: int,
    threads: Iterable[tuple[Thread, bool]],
    embedder: OnnxEmbedder,
    settings: Settings,
) -> tuple[Path, TreePart]:
    """The threads of the sequence ``threads`` (each flagged real or remixed) after ``after`` until
    it holds ``size`` chunks, rendered once into a folder under ``parts``."""
    first = after.end if after else 0
    folder = parts / f"threads-{first}-to-{size}-chunks"
    record = folder.with_suffix(".json")
    if record.exists():
        return folder, TreePart(**json.loads(record.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    print(f"  rendering {parts.parent.name} threads from thread {first} to {size} chunks", flush=True)
    part = TreePart(**{**asdict(after or TreePart(0, 0, 0, 0, 0, 0)), "first": first})
    for thread, real in islice(threads, first, None):
        if part.chunks >= size:
            break
        path = folder / thread_relpath(thread, unique_id=True)
        markdown = render_thread(thread)
        chunks = chunk_count(markdown, path, embedder, settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markdown, encoding="utf-8")
        part.end, part.chunks, part.files = part.end + 1, part.chunks + chunks, part.files + 1
        part.real_files += real
        part.real_chunks += chunks if real else 0
    record.write_text(json.dumps(asdict(part)))
    return folder, part


def chitchat_indexes(
    sizes: list[int], cache: Path, embedder: OnnxEmbedder, settings: Settings
) -> tuple[list[BuiltIndex], str]:
    """One index per size, each at least that many chunks; each larger one starts as a copy of the
    smaller and indexes only the threads that follow (so a later, larger run reuses a smaller build)."""
    sizes = sorted(sizes)
    conversations, digest = chitchat_conversations()
    folder = cache / f"chitchat-{index_key(digest, embedder, settings)}"
    built: list[BuiltIndex] = []
    part: TreePart | None = None
    for n, size in enumerate(sizes):
        threads = chitchat_threads(conversations)
        root, part = rendered_part(folder / "parts", part, size, threads, embedder, settings)
        store = folder / f"store-{'-'.join(map(str, sizes[: n + 1]))}"
        found = cached_index(store)
        if found is None:
            shutil.rmtree(store, ignore_errors=True)
            print(f"  indexing chitchat up to {size} chunks (cached after this run)", flush=True)
            base = built[-1] if built else None
            found = index_folder(f"chitchat {size}", root, store, embedder, settings, base)
        built.append(found)
    return built, part.describe() if part else ""


# --- documentation ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """One BEIR document: the question a turn asks of it (its title without the corpus's prefix) and
    the text that answers."""

    corpus: str
    doc_id: str
    question: str
    text: str


def documentation_sections(corpora: Sequence[Path]) -> list[Section]:
    """Every section with text of each BEIR folder, in file order."""
    sections = []
    for folder in corpora:
        for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            if row.get("text", "").strip():
                title = row.get("title") or row["_id"]
                question = title.split(": ", 1)[-1].strip() or title
                sections.append(Section(folder.name, row["_id"], question, row["text"].strip()))
    return sections


def section_groups(sections: list[Section], rng: random.Random) -> Iterator[list[Section]]:
    """The sections in order, cut into runs of one to four of the same corpus: the real threads."""
    start = 0
    while start < len(sections):
        corpus = sections[start].corpus
        group = [s for s in sections[start : start + rng.randint(1, 4)] if s.corpus == corpus]
        yield group
        start += len(group)


def documentation_threads(sections: list[Section], seed: int = THREADS_SEED) -> Iterator[tuple[Thread, bool]]:
    """Every section once, in order, as threads of one to four consecutive sections of a corpus (a
    turn each: the section's question, its text as the answer); then endless remixed threads of one
    to four turns, each answering with two sections drawn at random, joined (their text real and the
    chunks cut across the join distinct; only the pairing is made up). The flag says which."""
    rng = random.Random(seed)
    for n, group in enumerate(section_groups(sections, rng)):
        turns = [Turn(question=s.question, answer=s.text) for s in group]
        yield (
            Thread(uuid=f"docs-{n:06d}", title=group[0].question[:120], space=group[0].corpus, turns=turns),
            True,
        )
    for n in range(10**9):
        turns = []
        for _ in range(rng.randint(1, 4)):
            first, second = rng.choice(sections), rng.choice(sections)
            turns.append(Turn(question=first.question, answer=f"{first.text}\n\n{second.text}"))
        yield (
            Thread(uuid=f"remix-{n:06d}", title=turns[0].question[:120], space="Remixed", turns=turns),
            False,
        )


def documentation_library(
    corpora: Sequence[Path], sizes: list[int], cache: Path, embedder: OnnxEmbedder, settings: Settings
) -> tuple[list[tuple[Path, TreePart]], list[Section]]:
    """A library folder per size (the documentation threads from the first until the library holds
    that many chunks), and the sections they come from; rendered once into the cache."""
    sections = documentation_sections(corpora)
    digest = hashlib.sha256("".join(f"{s.doc_id}{s.text}" for s in sections).encode()).hexdigest()
    parts = cache / f"documentation-{index_key(digest, embedder, settings)}" / "libraries"
    libraries = []
    for size in sizes:  # each size a whole library of its own, the smaller one rendered again in it
        threads = documentation_threads(sections)
        libraries.append(rendered_part(parts, None, size, threads, embedder, settings))
    return libraries, sections
