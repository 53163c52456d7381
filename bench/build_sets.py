"""Build the BEIR evaluation sets under ``bench/sets/`` from documentation installed by Debian packages.

Run: ``PYTHONPATH=. python bench/build_sets.py [NAME ...] [--out DIR] [--check]``

Each set (``bench/evalsets/catalog.py`` lists them) is written as ``corpus.jsonl``,
``queries.jsonl``, ``qrels.tsv`` and a ``README.md`` naming its packages, their versions and
licences. The packages must be installed (``apt-get install debian-faq debian-reference-en
r-doc-info perl-doc zsh-common zsh-doc``); a missing one is named with the command that installs
it. ``--check`` rebuilds in memory and reports any set whose committed files differ.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.evalsets.beir import BuiltSet, MissingPackageError, build, write
from bench.evalsets.catalog import SETS
from bench.evalsets.readme import readme

REPO = Path(__file__).resolve().parents[1]
FILES = ("corpus.jsonl", "queries.jsonl", "qrels.tsv", "README.md")


def write_set(built: BuiltSet, folder: Path) -> None:
    write(built, folder)
    (folder / "README.md").write_text(readme(built), encoding="utf-8")


def same_file(committed: Path, fresh: Path) -> bool:
    return committed.exists() and committed.read_bytes() == fresh.read_bytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"sets to build (default: all of {[s.name for s in SETS]})")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "sets", help="parent folder of the sets")
    parser.add_argument(
        "--check", action="store_true", help="compare a fresh build with --out; write nothing"
    )
    args = parser.parse_args(argv)
    unknown = set(args.names) - {spec.name for spec in SETS}
    if unknown:
        parser.error(f"unknown set(s): {', '.join(sorted(unknown))}")
    differing = []
    for spec in SETS:
        if args.names and spec.name not in args.names:
            continue
        try:
            built = build(spec)
        except MissingPackageError as missing:
            print(f"build_sets: {spec.name}: {missing}", file=sys.stderr)
            return 2
        target = args.out / spec.name
        if args.check:
            with tempfile.TemporaryDirectory() as scratch:
                fresh = Path(scratch)
                write_set(built, fresh)
                if any(not same_file(target / name, fresh / name) for name in FILES):
                    differing.append(spec.name)
        else:
            write_set(built, target)
        print(
            f"{spec.name}: {len(built.corpus)} documents, {len(built.queries)} queries, "
            f"{len(built.qrels)} qrels, {len(built.unanswered)} questions left out"
            + (f" -> {target}" if not args.check else ""),
        )
    if differing:
        print(f"build_sets: differs from {args.out}: {', '.join(differing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
