"""Prune a BERT-style cross-encoder's last layer to the one token its head reads.

The classification head reads the last layer's output at token 0 ([CLS]) and nothing else. Every
op of that layer after attention (output projection, residual, LayerNorm, feed-forward) works row
by row, so those rows are needed for token 0 only: slicing the attention context and the residual
to token 0 leaves the logit unchanged and drops ~12% of the model's matrix work (three of the last
layer's four weight matrices, for every token but one). Attention itself still sees every token.

The pattern is found structurally (head ``Gather(axis=1, index 0)`` of a LayerNorm, then back
through the residual Adds to the output projection); a graph that does not match is left as it is.
Provisioning keeps the pruned graph only if its logits match the full one's
(``provisioning.reranker.prune_last_layer``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from onnx import GraphProto, NodeProto, TensorProto

_PREFIX = "cls_prune"
Pruning = Literal["pruned", "already pruned", "no match"]


def prune_to_cls(source: Path, target: Path) -> Pruning:
    """Write the pruned graph of ``source`` to ``target`` ("pruned"); otherwise write nothing."""
    import onnx
    from onnx import numpy_helper
    from onnx.helper import make_node

    model = onnx.load(str(source))
    graph = model.graph
    if any(node.name.startswith(_PREFIX) for node in graph.node):
        return "already pruned"
    found = _last_layer(graph)
    if found is None:
        return "no match"
    out_projection, residual_add, residual_input = found
    for name, value in (("starts", 0), ("ends", 1), ("axes", 1)):
        graph.initializer.append(numpy_helper.from_array(np.array([value], np.int64), f"{_PREFIX}/{name}"))
    bounds = [f"{_PREFIX}/starts", f"{_PREFIX}/ends", f"{_PREFIX}/axes"]
    context = out_projection.input[0]
    slices = [
        make_node("Slice", [context, *bounds], [f"{_PREFIX}/context"], name=f"{_PREFIX}/context"),
        make_node("Slice", [residual_input, *bounds], [f"{_PREFIX}/residual"], name=f"{_PREFIX}/residual"),
    ]
    out_projection.input[0] = f"{_PREFIX}/context"
    residual_add.input[list(residual_add.input).index(residual_input)] = f"{_PREFIX}/residual"
    position = list(graph.node).index(out_projection)
    for offset, node in enumerate(slices):
        graph.node.insert(position + offset, node)
    onnx.save_model(model, str(target))
    return "pruned"


def _last_layer(graph: GraphProto) -> tuple[NodeProto, NodeProto, str] | None:
    """(output projection MatMul, attention residual Add, the layer input it adds) or None."""
    producer = {output: node for node in graph.node for output in node.output}
    constants = {i.name: i for i in graph.initializer}
    head = next((n for n in graph.node if _is_cls_gather(n, producer, constants)), None)
    if head is None or _op(producer, head.input[0]) != "LayerNormalization":
        return None
    ffn_residual = producer.get(producer[head.input[0]].input[0])
    if ffn_residual is None or ffn_residual.op_type != "Add":
        return None
    norms = [i for i in ffn_residual.input if _op(producer, i) == "LayerNormalization"]
    if len(norms) != 1:
        return None
    attention_residual = producer.get(producer[norms[0]].input[0])
    if attention_residual is None or attention_residual.op_type != "Add":
        return None
    inputs = list(attention_residual.input)
    layer_inputs = [i for i in inputs if _op(producer, i) == "LayerNormalization"]
    projected = [i for i in inputs if _op(producer, i) == "Add"]
    if len(layer_inputs) != 1 or len(projected) != 1:
        return None
    bias_add = producer[projected[0]]
    matmul = next((producer[i] for i in bias_add.input if _op(producer, i) == "MatMul"), None)
    if matmul is None or matmul.input[1] not in constants:
        return None
    return matmul, attention_residual, layer_inputs[0]


def _op(producer: dict[str, NodeProto], name: str) -> str | None:
    node = producer.get(name)
    return node.op_type if node is not None else None


def _is_cls_gather(
    node: NodeProto, producer: dict[str, NodeProto], constants: dict[str, TensorProto]
) -> bool:
    """``Gather(x, 0, axis=1)``: the head taking token 0's vector."""
    from onnx import numpy_helper

    if node.op_type != "Gather" or not any(a.name == "axis" and a.i == 1 for a in node.attribute):
        return False
    index = node.input[1]
    source = producer.get(index)
    if source is not None and source.op_type == "Constant":
        value = numpy_helper.to_array(source.attribute[0].t)
    elif index in constants:
        value = numpy_helper.to_array(constants[index])
    else:
        return False
    return value.size == 1 and int(value.reshape(-1)[0]) == 0
