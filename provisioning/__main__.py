"""The image build's model steps (the Dockerfile's model stages run these; so can any builder):

    python -m provisioning embedder DIR
    python -m provisioning reranker DIR --source hub|trained|standin|auto

``--source auto`` downloads the hub's cross-encoder and, when the hub cannot be reached, builds the
project's own trained one from the weights it ships (``provisioning.trained_reranker``), or the offline
stand-in where none ship (its name, in the record and on ``/healthz``, says it is one). Either way the
report printed last says what was installed and which precision is served.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Literal

from provisioning import reranker, standin, trained_reranker
from provisioning.embedder import prepare_embedder

RerankerSource = Literal["hub", "trained", "standin", "auto"]


def provision_reranker(model_dir: Path, source: RerankerSource) -> reranker.ProvisionReport:
    """The hub's model, the project's trained one, or the stand-in (``auto``: the first that can be had)."""
    if source == "standin":
        return standin.build_standin(model_dir)
    if source == "trained":
        return trained_reranker.build_trained(model_dir)
    try:
        reranker.download(model_dir)
    except Exception as exc:  # offline, refused by a proxy, or the hub is down: each is "unreachable"
        if source == "hub":
            raise SystemExit(f"could not download {reranker.HUB_REPO}: {exc}") from exc
        if trained_reranker.shipped_weights() is not None:
            print(f"{reranker.HUB_REPO} unreachable ({type(exc).__name__}); building the project's own")
            return trained_reranker.build_trained(model_dir)
        print(f"{reranker.HUB_REPO} unreachable ({type(exc).__name__}); building the offline stand-in")
        return standin.build_standin(model_dir)
    return reranker.quantize_and_verify(model_dir, reranker.HUB_REPO)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m provisioning", description=__doc__.splitlines()[0])
    models = parser.add_subparsers(dest="model", required=True)
    models.add_parser("embedder", help="export and quantise the packaged MiniLM").add_argument(
        "dir", type=Path
    )
    rerank = models.add_parser("reranker", help="provision the cross-encoder")
    rerank.add_argument("dir", type=Path)
    rerank.add_argument("--source", choices=["hub", "trained", "standin", "auto"], default="auto")
    args = parser.parse_args(argv)
    if args.model == "embedder":
        print(f"embedder ready at {args.dir}: {prepare_embedder(args.dir)}")
    else:
        report = provision_reranker(args.dir, args.source)
        print(f"cross-encoder ready at {args.dir}: {report.name}; {report.detail}")


if __name__ == "__main__":
    main(sys.argv[1:])
