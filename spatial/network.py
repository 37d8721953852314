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
from .model import ACTIVATIONS, LEAKY_RELU_ALPHA, Expr
from .problem import ProblemError

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
        """The outputs at ``inputs`` (expressions or numbers), recorded as model expressions."""
        if len(inputs) != self.n_inputs:
            raise ProblemError(f"{self.name}: takes {self.n_inputs} inputs, got {len(inputs)}")
        values = [api.constant(v) for v in inputs]
        for step in self.steps:
            values = step(values)
        return values
