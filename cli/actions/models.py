"""Provision the ONNX models (build steps, run once): the embedder, and the cross-encoder or a stand-in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cli.console import console
from shared.settings import get_settings

if TYPE_CHECKING:
    from provisioning.reranker import ProvisionReport


def prepare_models(standin_reranker: bool, force: bool) -> None:
    """Export and quantise the embedder; quantise the provisioned cross-encoder, else build the
    project's own trained one from the weights it ships (or, asked for, the stand-in)."""
    from provisioning import reranker, standin, trained_reranker
    from provisioning.embedder import prepare_embedder

    settings = get_settings()
    figures = prepare_embedder(settings.embedder_dir, force=force)
    console.print(f"embedder ready at {settings.embedder_dir}: int8 vs fp32 cosine {figures}")
    result: ProvisionReport | None
    if standin_reranker:
        result = standin.build_standin(settings.reranker_dir)
    else:
        result = reranker.prepare(settings.reranker_dir)
        if result is None and trained_reranker.shipped_weights() is not None:
            result = trained_reranker.build_trained(settings.reranker_dir)
    if result is None:
        console.print(
            f"no cross-encoder at {settings.reranker_dir}: run `hindsight models pull` "
            "(reranking passes the fused order through until then)"
        )
    else:
        console.print(f"cross-encoder ready at {settings.reranker_dir}: {result}")


def pull_reranker() -> bool:
    """Download the trained cross-encoder (needs a network) and quantise it; False if the download failed."""
    from provisioning import reranker

    settings = get_settings()
    try:
        console.print(reranker.pull(settings.reranker_dir))
    except OSError as exc:
        console.print(f"[red]could not download {reranker.HUB_REPO}[/red]: {exc}")
        return False
    return True
