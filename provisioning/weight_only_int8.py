"""Weight-only int8 of a fused BERT graph: the cross-encoder's second int8 scheme, after per-row int8."""

from __future__ import annotations

from pathlib import Path


def quantize_int8_weight_only(source: Path, target: Path, num_heads: int, hidden_size: int) -> None:
    """Fuse a BERT graph, then store its MatMul weights as int8 in blocks of 32 (``MatMulNBits``).

    Fusion (Attention, SkipLayerNorm, BiasGelu, EmbedLayerNorm) cuts the dozens of small kernels
    of a 6-layer MiniLM per run. Unlike dynamic quantisation, which picks ONE activation scale per
    tensor and run (so a pair's logit depends on the other pairs padded into its batch), the
    activations here are quantised per row and block (``accuracy_level=4``): a row's result is a
    function of that row alone, which is what lets the reranker batch different questions together.
    Block-wise scales are also finer than per-channel ones, so the ranking stays close to fp32.
    """
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )
    from onnxruntime.transformers.optimizer import optimize_model

    fused = optimize_model(
        str(source), model_type="bert", num_heads=num_heads, hidden_size=hidden_size, opt_level=0
    )
    config = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True, accuracy_level=4, bits=8)
    quantizer = MatMulNBitsQuantizer(fused.model, algo_config=config)
    quantizer.process()
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(quantizer.model.model, str(target))
