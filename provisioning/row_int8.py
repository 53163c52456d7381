"""Per-row int8: each MatMul with constant weights runs as an integer GEMM, one activation scale per row.

ORT's dynamic quantisation picks ONE activation scale per tensor and run, so a pair's logit depends on
whatever else shares the run (and per-tensor scales cost a MiniLM cross-encoder its ranking). Here
every row (token) of an activation gets its own symmetric scale, ``max|row| / 127``, computed in the
graph, and the weights one scale per output channel:

    y[t, n] = s[t] * w[n] * sum_k q(x)[t, k] * q(W)[k, n]

The integer sum is exact and the scales belong to that row alone, so a row's result is bit for bit the
same whichever rows share its run: batches may mix different users' questions. The integer GEMM is
``MatMulIntegerToFloat`` (u8 x s8 VNNI/AMX kernels).

Per-row scales still lose the small channels of a row to its outlier channels (BERT's hidden states
have a few); SmoothQuant moves that spread into the weights first: input channel ``k`` is divided by
``f[k] = max|x_k|**alpha / max|W_k|**(1 - alpha)`` (maxima measured once, on fixed calibration inputs,
so the factors are constants) and the weight rows multiplied by it, which leaves the product unchanged
(alpha: docs/decisions/int8-models.md).

Only provisioning imports this (it needs ``onnx``); the worker just runs the file it writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnx import ModelProto, NodeProto, TensorProto

SMOOTHING_ALPHA = 0.7
_ZERO_POINT = 128  # u8 activations, symmetric around 128: the u8 x s8 kernels are the fast ones


def quantize_int8_per_row(
    source: Path, target: Path, calibration: Iterable[dict[str, np.ndarray]], alpha: float = SMOOTHING_ALPHA
) -> int:
    """Write ``target``: ``source`` with every constant-weight MatMul made per-row int8; returns how many.

    ``calibration`` feeds (input name -> array) only set the smoothing factors, never a scale used at
    run time; any MatMul whose weight is not a constant (attention scores) and every other op stay fp32.
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 13:
        raise ValueError(f"{source}: opset {opset} < 13 (per-axis QuantizeLinear); re-export the model")
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    matmuls = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    factors = _smoothing_factors(model, matmuls, weights, calibration, alpha)
    graph = _RowInt8Graph(model, opset)
    replaced = {id(node) for node in matmuls}
    nodes: list[NodeProto] = []
    for node in model.graph.node:
        if id(node) in replaced:
            nodes += graph.matmul(node, weights[node.input[1]].astype(np.float32), factors[node.input[0]])
        else:
            nodes.append(node)
    graph.install(nodes)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(target))
    return len(matmuls)


def _smoothing_factors(
    model: ModelProto,
    matmuls: list[NodeProto],
    weights: dict[str, np.ndarray],
    calibration: Iterable[dict[str, np.ndarray]],
    alpha: float,
) -> dict[str, np.ndarray]:
    """Per input channel of each quantised activation: ``max|x|**a / max|W|**(1-a)``, in [0.01, 100]."""
    import onnx
    import onnxruntime as ort

    activations = sorted({n.input[0] for n in matmuls})
    weight_max: dict[str, np.ndarray] = {}
    for node in matmuls:
        row_max = np.abs(weights[node.input[1]]).max(axis=1)
        weight_max[node.input[0]] = np.maximum(weight_max.get(node.input[0], row_max), row_max)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in activations:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    act_max = {name: np.zeros_like(weight_max[name]) for name in activations}
    for feed in calibration:
        outputs = session.run(activations, {k: v for k, v in feed.items() if k in inputs})
        for name, value in zip(activations, outputs, strict=True):
            act_max[name] = np.maximum(act_max[name], np.abs(value).reshape(-1, value.shape[-1]).max(axis=0))
    return {
        name: np.clip(act_max[name] ** alpha / np.maximum(weight_max[name], 1e-5) ** (1 - alpha), 1e-2, 1e2)
        for name in activations
    }


class _RowInt8Graph:
    """Builds the replacement nodes; an activation feeding several MatMuls (Q, K, V) is quantised once."""

    def __init__(self, model: ModelProto, opset: int) -> None:
        self.model = model
        self.opset = opset
        self.initializers: list[TensorProto] = []
        self.quantised: dict[str, str] = {}
        self.count = 0
        self._constant("rq/one", np.array(1.0, np.float32))
        self._constant("rq/zero_point", np.array(_ZERO_POINT, np.uint8))
        self._constant("rq/axis1", np.array([1], np.int64))
        self._constant("rq/start", np.array([0], np.int64))
        self._constant("rq/end", np.array([-1], np.int64))
        self._constant("rq/tiny", np.array(1e-12, np.float32))
        self._constant("rq/inv127", np.array(1 / 127, np.float32))

    def _constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def _quantise(self, x: str, factors: np.ndarray) -> list[NodeProto]:
        """Nodes turning ``x`` [..., K] into u8 rows ``{p}/q`` [T, K] with scales ``{p}/scale`` [T, 1]."""
        from onnx import TensorProto
        from onnx.helper import make_node, make_tensor

        p = f"rq/x{len(self.quantised)}"
        self.quantised[x] = p
        k = factors.shape[0]
        shape = self._constant(f"{p}/rows_shape", np.array([-1, k], np.int64))
        inverse = self._constant(f"{p}/inv_factors", (1 / factors).astype(np.float32))
        reduce = (
            make_node("ReduceMax", [f"{p}/abs"], [f"{p}/max"], axes=[1], keepdims=0)
            if self.opset < 18
            else make_node("ReduceMax", [f"{p}/abs", "rq/axis1"], [f"{p}/max"], keepdims=0)
        )
        zero_point = make_tensor("zp", TensorProto.UINT8, [1], [_ZERO_POINT])
        return [
            make_node("Shape", [x], [f"{p}/shape"]),
            make_node("Slice", [f"{p}/shape", "rq/start", "rq/end"], [f"{p}/lead"]),
            make_node("Reshape", [x, shape], [f"{p}/rows_raw"]),
            make_node("Mul", [f"{p}/rows_raw", inverse], [f"{p}/rows"]),
            make_node("Abs", [f"{p}/rows"], [f"{p}/abs"]),
            reduce,
            make_node("Max", [f"{p}/max", "rq/tiny"], [f"{p}/max_nonzero"]),
            make_node("Mul", [f"{p}/max_nonzero", "rq/inv127"], [f"{p}/row_scale"]),
            make_node("Shape", [f"{p}/row_scale"], [f"{p}/count"]),
            make_node("ConstantOfShape", [f"{p}/count"], [f"{p}/zero_points"], value=zero_point),
            make_node(
                "QuantizeLinear", [f"{p}/rows", f"{p}/row_scale", f"{p}/zero_points"], [f"{p}/q"], axis=0
            ),
            make_node("Unsqueeze", [f"{p}/row_scale", "rq/axis1"], [f"{p}/scale"]),
        ]

    def matmul(self, node: NodeProto, weight: np.ndarray, factors: np.ndarray) -> list[NodeProto]:
        """``node``'s replacement: smoothed per-channel int8 weights times per-row int8 activations."""
        from onnx.helper import make_node

        x, output = node.input[0], node.output[0]
        nodes = [] if x in self.quantised else self._quantise(x, factors)
        p = self.quantised[x]
        smoothed = weight * factors[:, None]
        channel_scale = np.maximum(np.abs(smoothed).max(axis=0), 1e-12) / 127
        q_weight = np.clip(np.round(smoothed / channel_scale), -127, 127).astype(np.int8)
        m = f"rq/m{self.count}"
        self.count += 1
        self._constant(f"{m}/w", q_weight)
        self._constant(f"{m}/w_scale", channel_scale.astype(np.float32))
        self._constant(f"{m}/n", np.array([weight.shape[1]], np.int64))
        return [
            *nodes,
            make_node(
                "MatMulIntegerToFloat",
                [f"{p}/q", f"{m}/w", "rq/one", f"{m}/w_scale", "rq/zero_point"],
                [f"{m}/y_rows"],
                domain="com.microsoft",
            ),
            make_node("Mul", [f"{m}/y_rows", f"{p}/scale"], [f"{m}/y"]),
            make_node("Concat", [f"{p}/lead", f"{m}/n"], [f"{m}/shape"], axis=0),
            make_node("Reshape", [f"{m}/y", f"{m}/shape"], [output]),
        ]

    def install(self, nodes: list[NodeProto]) -> None:
        """Swap in the new nodes, drop the fp32 weights nothing reads any more, declare the ms domain."""
        from onnx.helper import make_opsetid

        graph = self.model.graph
        read = {name for node in nodes for name in node.input}
        kept = [i for i in graph.initializer if i.name in read]
        del graph.initializer[:]
        graph.initializer.extend(kept + self.initializers)
        del graph.node[:]
        graph.node.extend(nodes)
        if not any(o.domain == "com.microsoft" for o in self.model.opset_import):
            self.model.opset_import.append(make_opsetid("com.microsoft", 1))
