"""The reranker's inputs on each set, written once, so cross-encoders are scored without the services.

Run: ``PYTHONPATH=. python bench/rerank_inputs.py bench/sets/debian-faq ... --out inputs.jsonl``

For every question of each set, the product's fused list (``retrieval_quality.product_candidates``,
no HyDE): the first ``keep`` candidates as the reranker gets them (the passage's text and its
document), then the documents of the rest in order, and the question's judgements. Each set's
corpus is also asked the questions of the next set in the list (``answerable`` false): no passage
of this corpus answers them, so a cross-encoder's top logit on those is what "nothing found" must
refuse. ``provisioning.reranker_training.train --eval`` and ``bench/answerability.py`` read the file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.retrieval_quality import DEFAULT_CACHE, index_corpus, load_dataset, product_candidates
from services.retriever.search import RetrievalConfig
from shared.contracts import Strategy
from shared.embedding import OnnxEmbedder
from shared.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset_dirs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--foreign", type=int, default=60, help="questions of the next set asked of each")
    args = parser.parse_args()
    settings = Settings()
    embedder = OnnxEmbedder(
        settings.embedder_dir, settings.embedding.onnx_threads, settings.embedding.embed_batch_size
    )
    keep = RetrievalConfig.from_settings(settings.retrieval, Strategy.PRECISE).keep
    datasets = [load_dataset(folder) for folder in args.dataset_dirs]
    with args.out.open("w") as out:
        for number, (folder, dataset) in enumerate(zip(args.dataset_dirs, datasets, strict=True)):
            corpus = index_corpus(dataset, args.cache_dir, embedder, settings)
            search = product_candidates(corpus, embedder, None, settings)
            foreign = datasets[(number + 1) % len(datasets)]
            asked = [(qid, text, True) for qid, text in sorted(dataset.queries.items())]
            asked += [
                (f"foreign:{qid}", text, False)
                for qid, text in sorted(foreign.queries.items())[: args.foreign]
            ]
            for qid, text, answerable in asked:
                candidates = search(text)
                documents = corpus.chunk_documents([Path(c.chunk.source_uri).name for c in candidates])
                row = {
                    "set": folder.name,
                    "qid": qid,
                    "query": text,
                    "answerable": answerable,
                    "head": [
                        {"doc": d, "text": c.text}
                        for d, c in zip(documents[:keep], candidates[:keep], strict=True)
                    ],
                    "tail": documents[keep:],
                    "qrels": dataset.qrels.get(qid, {}) if answerable else {},
                }
                out.write(json.dumps(row) + "\n")
            print(f"{folder.name}: {len(asked)} questions", flush=True)


if __name__ == "__main__":
    main()
