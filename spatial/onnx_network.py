"""ONNX networks in: an ONNX file's chain of dense layers as a :class:`.network.Network`.

``read_onnx(path)`` reads the file with the ``onnx`` package (``pbbflow[onnx]``, imported only
here) and runs nothing of it: the graph is walked node by node, each node one of :data:`OPERATORS`.

- One graph input (its dims without a value, such as a batch dimension, count as 1) and one graph
  output; the values between them form a chain: each node takes at most one of them, the rest of
  its inputs are constants (initializers, ``Constant`` nodes).
- ``Gemm`` (alpha, beta, transA, transB), ``MatMul`` with a constant matrix, ``Add``/``Sub``/
  ``Mul``/``Div`` with a constant (``Div`` by it only), ``Relu``, ``LeakyRelu``, ``Tanh``,
  ``Sigmoid``, ``Softplus``, ``Identity``, and the shape-only ``Flatten``, ``Reshape``, ``Squeeze``
  and ``Unsqueeze`` (on the chain's value they keep its size, on constants they reshape them).
- Weights are read as stored: a float32 weight is the double it is exactly. A Gemm's alpha is a
  multiplication on the tape; beta scales its bias only where the product is a double exactly.
- Tensors in external data files load from the model's folder only: a location that leaves it is
  refused.

Anything else is a ProblemError naming the file, the node and the operator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import numpy as np

from .model import LEAKY_RELU_ALPHA, Model
from .network import Activation, Elementwise, Layer, Network, Step
from .problem import Problem, ProblemError

ACTIVATION_OPERATORS = {
    "Relu": "relu",
    "LeakyRelu": "leaky_relu",
    "Tanh": "tanh",
    "Sigmoid": "sigmoid",
    "Softplus": "softplus",
}
ARITHMETIC = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
SHAPE_OPERATORS = ("Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze")
OPERATORS = ("Gemm", "MatMul", *ARITHMETIC, *ACTIVATION_OPERATORS, *SHAPE_OPERATORS, "Constant")


def _onnx():
    """The ``onnx`` package, or a ProblemError saying how to install it."""
    try:
        import onnx
        import onnx.defs
        import onnx.external_data_helper
        import onnx.numpy_helper
    except ImportError:
        raise ProblemError("reading ONNX files needs the onnx package: install pbbflow[onnx]") from None
    return onnx


def read_onnx(path: str | Path) -> Network:
    """The network in the ONNX file at ``path`` (see the module doc); ProblemError naming the file
    for anything it cannot take."""
    path = Path(path)
    where = path.name
    if not path.is_file():
        raise ProblemError(f"{where}: {'not a regular file' if path.exists() else 'no such file'}")
    onnx = _onnx()
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # protobuf's DecodeError and friends: not an ONNX file
        raise ProblemError(f"{where}: not an ONNX model ({type(error).__name__})") from None
    _load_external_data(onnx, model, path.parent, where)
    return _Reader(onnx, model.graph, where).network()


def parse_onnx(data: bytes, where: str = "network") -> Network:
    """The network in an ONNX model's bytes ``data``, which must hold all its tensors (none in
    external files: nothing is read beside it); ProblemError naming ``where``."""
    onnx = _onnx()
    try:
        model = onnx.load_model_from_string(data)
    except Exception as error:  # protobuf's DecodeError and friends: not an ONNX model
        raise ProblemError(f"{where}: not an ONNX model ({type(error).__name__})") from None
    tensors = [*model.graph.initializer]
    tensors += [a.t for node in model.graph.node for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
    external = next((t.name for t in tensors if t.data_location == onnx.TensorProto.EXTERNAL), None)
    if external is not None:
        raise ProblemError(f"{where}: tensor {external!r} is stored in an external file (save the model whole)")
    return _Reader(onnx, model.graph, where).network()


def _load_external_data(onnx, model, folder: Path, where: str) -> None:
    """Load the tensors stored beside the model, each from a file inside ``folder``."""
    tensors = [*model.graph.initializer]
    tensors += [a.t for node in model.graph.node for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
    base = folder.resolve()
    for tensor in tensors:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = {entry.key: entry.value for entry in tensor.external_data}.get("location", "")
        target = (base / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(base) or target == base:
            raise ProblemError(f"{where}: tensor {tensor.name!r} refers to {location!r}, outside the model's folder")
        if not target.is_file():
            raise ProblemError(f"{where}: tensor {tensor.name!r}: its data file {location!r} is missing")
        try:
            onnx.external_data_helper.load_external_data_for_tensor(tensor, str(base))
        except Exception as error:
            raise ProblemError(f"{where}: tensor {tensor.name!r}: cannot read {location!r} ({error})") from None


@dataclass(frozen=True)
class _Value:
    """The chain's value at a tensor: its shape (every dim known; elements in row-major order) and
    the steps from the graph input to it."""

    shape: tuple[int, ...]
    steps: tuple[Step, ...]

    def then(self, step: Step, shape: tuple[int, ...] | None = None) -> _Value:
        """The value after ``step`` (in the shape ``shape``, by default this one)."""
        return _Value(self.shape if shape is None else shape, (*self.steps, step))


class _Reader:
    """Walks a graph's nodes in order, each tensor a constant (numpy) or a :class:`_Value`."""

    def __init__(self, onnx, graph, where: str):
        self.onnx = onnx
        self.graph = graph
        self.where = where
        self.tensors: dict[str, np.ndarray | _Value] = {}

    def fail(self, reason: str) -> ProblemError:
        return ProblemError(f"{self.where}: {reason}")

    def network(self) -> Network:
        for tensor in self.graph.initializer:
            self.tensors[tensor.name] = self.onnx.numpy_helper.to_array(tensor)
        inputs = [i for i in self.graph.input if i.name not in self.tensors]
        if len(inputs) != 1:
            raise self.fail(f"the graph must have one input (the network's), not {len(inputs)}")
        shape = self.input_shape(inputs[0])
        self.tensors[inputs[0].name] = _Value(shape, ())
        for index, node in enumerate(self.graph.node):
            label = f"node {node.name!r}" if node.name else f"node {index} (output {', '.join(node.output)})"
            try:
                outputs = self.node(node)
            except ProblemError as error:
                raise self.fail(f"{label}: {node.op_type}: {error.reason}") from None
            for name, value in zip(node.output, outputs):
                self.tensors[name] = value
        if len(self.graph.output) != 1:
            raise self.fail(f"the graph must have one output (a vector), not {len(self.graph.output)}")
        output = self.tensors.get(self.graph.output[0].name)
        if not isinstance(output, _Value):
            raise self.fail(f"the output {self.graph.output[0].name!r} does not depend on the input")
        return Network(math.prod(shape), output.steps, self.where)

    def input_shape(self, graph_input) -> tuple[int, ...]:
        kind = graph_input.type.tensor_type
        if not kind.HasField("shape"):
            raise self.fail(f"the input {graph_input.name!r} has no shape")
        shape = tuple(dim.dim_value if dim.HasField("dim_value") else 1 for dim in kind.shape.dim)
        if not shape or math.prod(shape) < 1:
            raise self.fail(
                f"the input {graph_input.name!r} has shape {shape}: expected a vector of one or more values"
            )
        return shape

    def node(self, node) -> list:
        """The node's outputs (a ProblemError with the reason alone: :meth:`network` names the node)."""
        op = node.op_type
        if node.domain not in ("", "ai.onnx") or op not in OPERATORS:
            name = op if node.domain in ("", "ai.onnx") else f"{node.domain}.{op}"
            raise ProblemError(f"the operator {name} is not supported (supported: {', '.join(OPERATORS)})")
        attributes = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        if op == "Constant":
            return [self.constant_attribute(attributes)]
        args = [self.tensor(name) if name else None for name in node.input]
        values = [a for a in args if isinstance(a, _Value)]
        if len(values) > 1:
            raise ProblemError("takes the chain's value twice (branches and skip connections are not supported)")
        if op in SHAPE_OPERATORS:
            return [self.reshape(op, args, attributes)]
        if not values:
            raise ProblemError(
                "computes on constants only (only shape operators may: a computed constant would be rounded)"
            )
        value = values[0]
        if op == "Gemm":
            return [self.gemm(args, attributes)]
        if op == "MatMul":
            return [self.matmul(args)]
        if op in ARITHMETIC:
            return [self.arithmetic(ARITHMETIC[op], args)]
        if op == "LeakyRelu":
            return [self.activate(value, "leaky_relu", float(attributes.get("alpha", self.default(op, "alpha"))))]
        return [self.activate(value, ACTIVATION_OPERATORS[op])]

    def default(self, op: str, attribute: str):
        """The default of an operator's attribute, as ONNX's schema states it (a float32 for a float)."""
        return self.onnx.helper.get_attribute_value(self.onnx.defs.get_schema(op).attributes[attribute].default_value)

    def tensor(self, name: str) -> np.ndarray | _Value:
        if name not in self.tensors:
            raise ProblemError(f"its input {name!r} is neither a graph input, an initializer nor an earlier output")
        return self.tensors[name]

    def constant_attribute(self, attributes: dict) -> np.ndarray:
        for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            if key in attributes:
                found = attributes[key]
                return self.onnx.numpy_helper.to_array(found) if key == "value" else np.array(found)
        raise ProblemError(f"holds none of value, value_float(s), value_int(s) (it has {', '.join(attributes)})")

    def reshape(self, op: str, args: list, attributes: dict) -> np.ndarray | _Value:
        """A shape-only operator: on a constant, numpy's; on the chain's value, the same values in the
        same order under a new shape of the same size."""
        data = args[0]
        if data is None or any(isinstance(a, _Value) for a in args[1:]):
            raise ProblemError("its shape must be a constant")
        shape = data.shape
        if op == "Flatten":
            axis = int(attributes.get("axis", 1))
            axis += len(shape) if axis < 0 else 0
            new = (math.prod(shape[:axis]), math.prod(shape[axis:]))
        elif op == "Reshape":
            new = self.reshape_target(shape, args)
        elif op in ("Squeeze", "Unsqueeze"):
            new = self.squeezed(op, shape, args, attributes)
        else:
            new = shape
        if math.prod(new) != math.prod(shape):
            raise ProblemError(f"changes the size: shape {shape} to {new}")
        return _Value(new, data.steps) if isinstance(data, _Value) else data.reshape(new)

    def reshape_target(self, shape: tuple[int, ...], args: list) -> tuple[int, ...]:
        if len(args) < 2 or args[1] is None:
            raise ProblemError("needs its shape input")
        target = [int(v) for v in np.asarray(args[1]).reshape(-1)]
        target = [shape[i] if v == 0 and i < len(shape) else v for i, v in enumerate(target)]
        if target.count(-1) > 1 or any(v < -1 for v in target):
            raise ProblemError(f"bad target shape {target}")
        if -1 in target:
            known = math.prod(v for v in target if v != -1)
            target[target.index(-1)] = math.prod(shape) // known if known else 0
        return tuple(target)

    def squeezed(self, op: str, shape: tuple[int, ...], args: list, attributes: dict) -> tuple[int, ...]:
        axes = attributes.get("axes")
        if axes is None and len(args) > 1 and args[1] is not None:
            axes = [int(v) for v in np.asarray(args[1]).reshape(-1)]
        if op == "Squeeze":
            if axes is None:
                return tuple(n for n in shape if n != 1)
            drop = {a % len(shape) for a in axes}
            if any(shape[a] != 1 for a in drop):
                raise ProblemError(f"squeezes an axis of size > 1 (shape {shape}, axes {list(axes)})")
            return tuple(n for i, n in enumerate(shape) if i not in drop)
        if axes is None:
            raise ProblemError("needs its axes")
        rank = len(shape) + len(axes)
        inserted = {a % rank for a in axes}
        rest = iter(shape)
        return tuple(1 if i in inserted else next(rest) for i in range(rank))

    def gemm(self, args: list, attributes: dict) -> _Value:
        """``alpha A' B' + beta C``, A' the value (one row), B' a constant."""
        a, b = args[0], args[1]
        c = args[2] if len(args) > 2 else None
        if not isinstance(a, _Value) or isinstance(c, _Value):
            raise ProblemError("the chain's value must be its first input A, B and C constants")
        a_shape = a.shape[::-1] if attributes.get("transA", 0) else a.shape
        matrix = _weights(b, "B").T if attributes.get("transB", 0) else _weights(b, "B")
        if len(a_shape) != 2 or a_shape[0] != 1 or matrix.ndim != 2 or matrix.shape[0] != a_shape[1]:
            raise ProblemError(f"A' has shape {a_shape} and B' {matrix.shape}: expected (1, n) and (n, m)")
        m = matrix.shape[1]
        alpha, beta = float(attributes.get("alpha", 1.0)), float(attributes.get("beta", 1.0))
        bias = None if c is None else _broadcast(_weights(c, "C"), (1, m))
        if bias is not None and beta != 1.0:
            bias = _exact_product(bias, beta)
        if alpha == 1.0:
            return a.then(Layer(matrix.T.copy(), bias), (1, m))
        value = a.then(Layer(matrix.T.copy()), (1, m)).then(Elementwise("mul", np.full(m, alpha)))
        return value if bias is None else value.then(Elementwise("add", bias))

    def matmul(self, args: list) -> _Value:
        """The value (one row) times a constant matrix, or a constant matrix times the value (one column)."""
        left, right = args
        if isinstance(left, _Value):
            matrix = _weights(right, "the matrix")
            rows = math.prod(left.shape[:-1]) if left.shape else 0
            if matrix.ndim != 2 or rows != 1 or left.shape[-1] != matrix.shape[0]:
                raise ProblemError(f"the value has shape {left.shape} and the matrix {matrix.shape}")
            shape = (*left.shape[:-1], matrix.shape[1])
            return left.then(Layer(matrix.T.copy()), shape)
        matrix = _weights(left, "the matrix")
        column = right.shape if len(right.shape) == 1 else right.shape[-2:]
        leading = right.shape[:-2]
        if matrix.ndim != 2 or column[0] != matrix.shape[1] or math.prod(column[1:]) != 1 or math.prod(leading) != 1:
            raise ProblemError(f"the matrix has shape {matrix.shape} and the value {right.shape}")
        shape = (matrix.shape[0],) if len(right.shape) == 1 else (*leading, matrix.shape[0], 1)
        return right.then(Layer(matrix.copy()), shape)

    def arithmetic(self, op: str, args: list) -> _Value:
        """The value and a constant, elementwise: a bias joins a linear layer before it that has none."""
        first, second = args
        value, constant = (first, second) if isinstance(first, _Value) else (second, first)
        if op == "div" and value is second:
            raise ProblemError("divides by the chain's value (only division by a constant is supported)")
        if op == "sub" and value is second:
            op = "rsub"
        vector = _broadcast(_weights(constant, "the constant"), value.shape)
        if op == "div" and np.any(vector == 0):
            raise ProblemError("divides by zero")
        last = value.steps[-1] if value.steps else None
        if op == "add" and isinstance(last, Layer) and last.bias is None and last.activation == "linear":
            return _Value(value.shape, (*value.steps[:-1], replace(last, bias=vector)))
        return value.then(Elementwise(op, vector))

    def activate(self, value: _Value, activation: str, alpha: float = LEAKY_RELU_ALPHA) -> _Value:
        """An activation: taken by a linear layer just before it, else a step of its own."""
        last = value.steps[-1] if value.steps else None
        if isinstance(last, Layer) and last.activation == "linear":
            return _Value(value.shape, (*value.steps[:-1], replace(last, activation=activation, alpha=alpha)))
        return value.then(Activation(activation, alpha))


def _weights(array, what: str) -> np.ndarray:
    """A constant as float64, exactly: floating types widen exactly; integers must be doubles."""
    if isinstance(array, _Value):
        raise ProblemError(f"{what} must be a constant")
    if array is None:
        raise ProblemError(f"{what} is missing")
    if array.dtype.kind not in "fiu":
        raise ProblemError(f"{what} has type {array.dtype}: expected numbers")
    result = array.astype(np.float64)
    if not np.all(np.isfinite(result)):
        raise ProblemError(f"{what} holds a value that is not finite")
    if array.dtype.kind in "iu" and not np.array_equal(result.astype(array.dtype), array):
        raise ProblemError(f"{what} holds an integer that is not a double")
    return result


def _broadcast(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``array`` broadcast to the value's ``shape``, flat: one constant per value."""
    try:
        joint = np.broadcast_shapes(array.shape, shape)
    except ValueError:
        joint = None
    if joint != tuple(shape):
        raise ProblemError(f"a constant of shape {array.shape} does not broadcast to the value's shape {shape}")
    return np.broadcast_to(array, shape).reshape(-1).copy()


def _exact_product(vector: np.ndarray, factor: float) -> np.ndarray:
    """``factor * vector`` where every product is a double exactly (float32 times float32 always is)."""
    product = vector * factor
    if any(Fraction(p) != Fraction(v) * Fraction(factor) for p, v in zip(product.tolist(), vector.tolist())):
        raise ProblemError(f"beta {factor!r} times C is not exact in doubles (scale C in the file instead)")
    return product


def onnx_problem(
    path: str | Path, domain: Sequence[tuple[float, float]], output: int = 0, maximize: bool = False
) -> Problem:
    """Minimize (or maximize) output ``output`` of the network at ``path`` over ``domain``: one
    (lo, hi) pair for all inputs, or one per input. A maximum is found as the minimum of minus the
    output, and the problem's name says so."""
    path = Path(path)
    network = read_onnx(path)
    where = path.name
    if len(domain) not in (1, network.n_inputs):
        raise ProblemError(
            f"{where}: the network has {network.n_inputs} inputs: give 1 or {network.n_inputs} intervals"
        )
    pairs = list(domain) * network.n_inputs if len(domain) == 1 else list(domain)
    for i, (lo, hi) in enumerate(pairs):
        if not lo < hi:
            raise ProblemError(f"{where}: interval {i} is empty or a point: {lo!r}:{hi!r} (lo < hi)")
    if isinstance(output, bool) or not 0 <= output < network.n_outputs:
        raise ProblemError(f"{where}: output {output} does not exist: the network has {network.n_outputs} outputs")
    name = path.stem if network.n_outputs == 1 else f"{path.stem} output {output}"
    if maximize:
        name += ", maximized: minus the output"
    model = Model(name)
    x = [model.variable(lo, hi) for lo, hi in pairs]
    value = network(x)[output]
    model.minimize(-value if maximize else value)
    problem = model.problem(origin=str(path))
    return replace(problem, maximized=True) if maximize else problem
