"""A dense network as a function of model variables: a sequence of steps, each recorded exactly.

A :class:`Network` is what every network format becomes (an ONNX file, :mod:`.onnx_network`; the
dense layers of an ANN file, :mod:`.ann`): its :class:`Layer` steps are ``activation(W x + b)``
with W float64 (out, in); its :class:`Elementwise` steps apply an exact constant to each value
(the scalings exporters write around the layers) and its :class:`Activation` steps an activation
that no linear layer takes. ``network(x)`` records it on the tape through
:func:`.model.dense` and :func:`.model.activate`: every weight is a constant and every product
and sum a tape operation, so interval bounds enclose the real network on the stored numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from . import model as api
from .model import ACTIVATIONS, LEAKY_RELU_ALPHA, Expr, Variable
from .problem import Problem, ProblemError
from .tape import Op

# an elementwise step's operation -> value op constant (``rsub``: constant - value)
ELEMENTWISE = {
    "add": lambda v, c: v + c,
    "sub": lambda v, c: v - c,
    "rsub": lambda v, c: c - v,
    "mul": lambda v, c: v * c,
    "div": lambda v, c: v / c,
}


@dataclass(frozen=True, eq=False)
class Layer:
    """``activation(weights @ x + bias)``: weights float64 (out, in), bias (out,) or None (no sum
    with a bias is recorded); ``alpha`` is leaky_relu's slope below 0."""

    weights: np.ndarray
    bias: np.ndarray | None = None
    activation: str = "linear"
    alpha: float = LEAKY_RELU_ALPHA

    def __post_init__(self) -> None:
        if self.weights.ndim != 2 or (self.bias is not None and self.bias.shape != (self.weights.shape[0],)):
            bias = None if self.bias is None else self.bias.shape
            raise ProblemError(f"network: a layer has weights {self.weights.shape} and bias {bias}")
        if self.activation not in ACTIVATIONS:
            raise ProblemError(f"network: unknown activation {self.activation!r} (one of {', '.join(ACTIVATIONS)})")

    @property
    def sizes(self) -> tuple[int, int]:
        """(inputs, outputs)."""
        return self.weights.shape[1], self.weights.shape[0]

    def __call__(self, values: list[Expr]) -> list[Expr]:
        return api.dense(values, self.weights, self.bias, self.activation, self.alpha)


@dataclass(frozen=True, eq=False)
class Elementwise:
    """Each value ``op`` its own constant (an operation of :data:`ELEMENTWISE`; ``constant``
    float64 (n,)): the exact constant, never one derived from it."""

    op: str
    constant: np.ndarray

    def __post_init__(self) -> None:
        if self.op not in ELEMENTWISE or self.constant.ndim != 1:
            raise ProblemError(
                f"network: an elementwise step needs a constant vector and one of {', '.join(ELEMENTWISE)}"
            )

    def __call__(self, values: list[Expr]) -> list[Expr]:
        apply = ELEMENTWISE[self.op]
        return [apply(v, api.constant(c)) for v, c in zip(values, self.constant.tolist())]


@dataclass(frozen=True, eq=False)
class Activation:
    """Each value through ``activation`` (where no linear layer comes before it to take it)."""

    activation: str
    alpha: float = LEAKY_RELU_ALPHA

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ProblemError(f"network: unknown activation {self.activation!r} (one of {', '.join(ACTIVATIONS)})")

    def __call__(self, values: list[Expr]) -> list[Expr]:
        return [api.activate(v, self.activation, self.alpha) for v in values]


Step = Layer | Elementwise | Activation


@dataclass(frozen=True, eq=False)
class Network:
    """``n_inputs`` values through ``steps`` in order; ``network(x)`` is the list of its outputs."""

    n_inputs: int
    steps: tuple[Step, ...]
    name: str = "network"
    n_outputs: int = field(init=False)

    def __post_init__(self) -> None:
        size = self.n_inputs
        for k, step in enumerate(self.steps):
            if isinstance(step, Layer):
                if step.sizes[0] != size:
                    raise ProblemError(
                        f"{self.name}: step {k} takes {step.sizes[0]} values, the one before gives {size}"
                    )
                size = step.sizes[1]
            elif isinstance(step, Elementwise) and step.constant.shape != (size,):
                raise ProblemError(f"{self.name}: step {k} has {len(step.constant)} constants for {size} values")
        object.__setattr__(self, "n_outputs", size)

    def __call__(self, inputs: Sequence) -> list[Expr]:
        """The outputs at ``inputs`` (expressions or numbers), recorded as model expressions; on
        distinct variables of one model each output is a :class:`.model.NetworkOutput`."""
        if len(inputs) != self.n_inputs:
            raise ProblemError(f"{self.name}: takes {self.n_inputs} inputs, got {len(inputs)}")
        values = [api.constant(v) for v in inputs]
        for step in self.steps:
            values = step(values)
        if not all(isinstance(v, Variable) and v.model is inputs[0].model for v in inputs):
            return values
        indices = tuple(v.data for v in inputs)
        if len(set(indices)) < len(indices):
            return values
        return [
            v if v.op in (Op.VAR, Op.CONST) else api.NetworkOutput(v.op, v.args, v.data, self, indices, k)
            for k, v in enumerate(values)
        ]

    def to_json(self) -> dict:
        """The network as plain JSON (every weight the double it is: JSON numbers round-trip)."""
        steps = []
        for step in self.steps:
            if isinstance(step, Layer):
                bias = None if step.bias is None else step.bias.tolist()
                layer = {"weights": step.weights.tolist(), "bias": bias, "activation": step.activation}
                steps.append({"layer": {**layer, "alpha": step.alpha}})
            elif isinstance(step, Elementwise):
                steps.append({"elementwise": {"op": step.op, "constant": step.constant.tolist()}})
            else:
                steps.append({"activation": {"activation": step.activation, "alpha": step.alpha}})
        return {"name": self.name, "n_inputs": self.n_inputs, "steps": steps}

    def objective_json(self, inputs: Sequence[int], c: Sequence, d: Sequence[float], combine: str = "max") -> dict:
        """The JSON of the objective ``combine_k (c[k] . network(x[inputs]) + d[k])`` (checked), as
        :attr:`.problem.Problem.network_objective` holds it."""
        rows = np.array(c, dtype=np.float64).reshape(len(d), -1)
        return NetworkObjective(self, tuple(inputs), rows, np.array(d, dtype=np.float64), combine).to_json()

    @classmethod
    def from_json(cls, document: dict) -> Network:
        """The network :meth:`to_json` wrote; ProblemError for anything malformed."""
        try:
            steps = []
            for entry in document["steps"]:
                (kind, step), *rest = entry.items()
                if rest or kind not in ("layer", "elementwise", "activation"):
                    raise ValueError(f"a step must be one of layer, elementwise, activation: {sorted(entry)}")
                if kind == "layer":
                    bias = None if step["bias"] is None else _vector(step["bias"])
                    weights = np.array(step["weights"], dtype=np.float64)
                    steps.append(Layer(weights, bias, step["activation"], float(step["alpha"])))
                elif kind == "elementwise":
                    steps.append(Elementwise(step["op"], _vector(step["constant"])))
                else:
                    steps.append(Activation(step["activation"], float(step["alpha"])))
            return cls(int(document["n_inputs"]), tuple(steps), str(document["name"]))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ProblemError(f"network: malformed JSON ({error})") from None


def forward_step(step: Layer | Activation | Elementwise, values: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The step's output at ``values`` (points along the first axis) in floating point, and its
    activation's input (None for an elementwise step)."""
    if isinstance(step, Elementwise):
        return ELEMENTWISE[step.op](values, step.constant), None
    if isinstance(step, Layer):
        values = values @ step.weights.T
        values = values if step.bias is None else values + step.bias
    return _activate(step.activation, step.alpha, values), values


def _activate(name: str, alpha: float, z: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(z, 0.0)
    if name == "leaky_relu":
        return np.where(z > 0, z, alpha * z)
    if name == "tanh":
        return np.tanh(z)
    if name == "sigmoid":
        return 0.5 * (1.0 + np.tanh(0.5 * z))
    if name == "softplus":
        return np.logaddexp(0.0, z)
    return z


def forms_and_gradient(network: Network, c: np.ndarray, d: np.ndarray, x: np.ndarray, combine: str = "max"):
    """The largest (``combine`` "max") or smallest ("min") of the forms ``c[k] . N(x) + d[k]`` at
    each row of ``x`` (B x n) and its gradient there (of the form attaining it), in floating point."""
    values, inputs = x, []  # each step's activation input (None for an elementwise step)
    for step in network.steps:
        values, z = forward_step(step, values)
        inputs.append(z)
    forms = values @ c.T + d
    chosen = np.argmax(forms, axis=1) if combine == "max" else np.argmin(forms, axis=1)
    gradient = c[chosen]
    for step, z in zip(reversed(network.steps), reversed(inputs)):
        gradient = _backward(step, z, gradient)
    return forms[np.arange(len(x)), chosen], gradient


def _backward(step, z: np.ndarray | None, gradient: np.ndarray) -> np.ndarray:
    """The gradient with respect to the step's input from the one of its output (``z``: its
    activation's input, from :func:`forward_step`)."""
    if isinstance(step, Elementwise):
        return gradient * _ELEMENTWISE_SLOPE[step.op](step.constant)
    gradient = gradient * _slope(step.activation, step.alpha, z)
    return gradient @ step.weights if isinstance(step, Layer) else gradient


_ELEMENTWISE_SLOPE = {
    "add": np.ones_like,
    "sub": np.ones_like,
    "rsub": lambda c: -np.ones_like(c),
    "mul": lambda c: c,
    "div": lambda c: 1.0 / c,
}


def _slope(name: str, alpha: float, z: np.ndarray) -> np.ndarray:
    if name == "relu":
        return (z > 0).astype(np.float64)
    if name == "leaky_relu":
        return np.where(z > 0, 1.0, alpha)
    if name == "tanh":
        return 1.0 - np.tanh(z) ** 2
    if name in ("sigmoid", "softplus"):  # softplus' slope is the sigmoid
        s = 0.5 * (1.0 + np.tanh(0.5 * z))
        return s * (1.0 - s) if name == "sigmoid" else s
    return np.ones_like(z)


def _vector(values) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise ValueError("expected a flat list of finite numbers")
    return array


@dataclass(frozen=True, eq=False)
class NetworkObjective:
    """An objective that is exactly ``c[k] . network(x[inputs]) + d[k]`` in real arithmetic, or
    the largest (``combine`` "max") or smallest ("min") of several such forms: c (rows, outputs)
    and d (rows,) doubles. :mod:`.network_bounds` bounds each row directly, and the objective by
    :meth:`combined`. A problem holds its JSON (:attr:`.problem.Problem.network_objective`);
    :meth:`of` reads it back."""

    network: Network
    inputs: tuple[int, ...]
    c: np.ndarray
    d: np.ndarray
    combine: str = "max"

    def __post_init__(self) -> None:
        if len(self.inputs) != self.network.n_inputs or len(set(self.inputs)) != len(self.inputs):
            raise ProblemError(f"network objective: {len(self.inputs)} inputs for {self.network.n_inputs}")
        n = self.network.n_outputs
        if (
            self.c.ndim != 2
            or self.c.shape[1:] != (n,)
            or self.d.shape != self.c.shape[:1]
            or not len(self.d)
            or not np.all(np.isfinite(self.c))
            or not np.all(np.isfinite(self.d))
        ):
            raise ProblemError(f"network objective: c must be rows of {n} finite numbers, d one finite number a row")
        if self.combine not in ("max", "min"):
            raise ProblemError(f'network objective: combine must be "max" or "min", not {self.combine!r}')

    def combined(self, row_bounds: np.ndarray) -> float | np.ndarray:
        """A lower bound of the objective from lower bounds of its rows, along the last axis (max:
        the largest; min: the smallest): a float for one vector of rows, else an array."""
        bound = (np.max if self.combine == "max" else np.min)(row_bounds, axis=-1)
        return float(bound) if np.ndim(bound) == 0 else bound

    def float_values(self, x: np.ndarray) -> np.ndarray:
        """The objective at the points ``x`` (B, problem variables) in floating point: estimates
        for choosing points, never a bound."""
        values = np.asarray(x, dtype=np.float64)[:, list(self.inputs)]
        for step in self.network.steps:
            values = forward_step(step, values)[0]
        return self.combined(values @ self.c.T + self.d)

    def to_json(self) -> dict:
        """Plain JSON; one row is written as it was before rows existed (a flat c, a number d)."""
        document = {"network": self.network.to_json(), "inputs": list(self.inputs)}
        if len(self.d) == 1:
            return {**document, "c": self.c[0].tolist(), "d": float(self.d[0])}
        return {**document, "c": self.c.tolist(), "d": self.d.tolist(), "combine": self.combine}

    @classmethod
    def of(cls, problem: Problem) -> NetworkObjective | None:
        """The network objective of ``problem``, or None."""
        document = problem.network_objective
        return None if document is None else cls.from_json(document)

    @classmethod
    def of_unconstrained(cls, problem: Problem) -> NetworkObjective | None:
        """The network objective of ``problem`` where it has no constraints, else None: such a
        problem's f is the objective alone, so its boxes, points and gradients can come from the
        layers (:func:`.explorer.bounds_whole_boxes`, :func:`.options.network_point_values`,
        :func:`.local.network_gradients`)."""
        return None if problem.tape.n_ineq or problem.tape.n_eq else cls.of(problem)

    @classmethod
    def from_json(cls, document: dict) -> NetworkObjective:
        """The objective :meth:`to_json` wrote; ProblemError for anything malformed."""
        try:
            inputs = tuple(int(i) for i in document["inputs"])
            network = Network.from_json(document["network"])
            c = np.array(document["c"], dtype=np.float64)
            d = np.atleast_1d(np.array(document["d"], dtype=np.float64))
            combine = document.get("combine", "max")
            return cls(network, inputs, c.reshape(1, -1) if c.ndim == 1 else c, d, combine)
        except (KeyError, TypeError, ValueError) as error:
            raise ProblemError(f"network objective: malformed JSON ({error})") from None
