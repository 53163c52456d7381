"""``python -m provisioning.reranker_training pairs --debs DIR --out DIR``: the training pairs."""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from pathlib import Path

from provisioning.reranker_training.packages import manual_sections, unpack_packages
from provisioning.reranker_training.pairs import build_pairs, write_pairs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m provisioning.reranker_training")
    commands = parser.add_subparsers(dest="command", required=True)
    pairs = commands.add_parser("pairs", help="fetch the training packages and write the pairs")
    pairs.add_argument("--debs", type=Path, required=True, help="where the .deb files are kept")
    pairs.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        versions = unpack_packages(args.debs, Path(scratch))
        documents = manual_sections(Path(scratch))
    passages, queries = build_pairs(documents)
    kinds = Counter(q.kind for q in queries)
    record = {"packages": versions, "documents": len(documents), "passages": len(passages), "queries": kinds}
    write_pairs(args.out, passages, queries, record)
    print(f"{len(documents)} documents, {len(passages)} passages, {len(queries)} queries {dict(kinds)}")


if __name__ == "__main__":
    main()
