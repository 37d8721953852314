"""The ANN file format: minimize the output of a trained dense network over its input box.

A JSON object with these keys (numbers are JSON numbers, all finite)::

    layers      [n0, n1, ..., nL]   layer sizes: n0 inputs, nL = 1 output (the objective)
    W           [W1, ..., WL]       Wk is a list of n_k rows of n_{k-1} numbers: shape (out, in)
    b           [b1, ..., bL]       bk has n_k numbers
    in_lo       number or n0 numbers   the domain of the inputs: x_i in [in_lo_i, in_hi_i]
    in_hi       number or n0 numbers   (in_lo_i < in_hi_i)
    y_mu, y_sd  numbers                 output scaling
    activation         optional, hidden layers: "tanh" (default), "sigmoid", "relu", "leaky_relu"
                       (slope 0.01), "softplus" or "linear"
    output_activation  optional, last layer: "linear" (default) or one of the above

Every other key is metadata; ``ann_min_f`` and ``ann_min_x``, when present, are the known
minimum and minimizer (``Problem.optimum`` / ``x_optimum``). ``name`` names the problem (default:
the file's stem).

The network, as a function of real x (real arithmetic on the file's doubles)::

    a0 = 2 (x - in_lo) / (in_hi - in_lo) - 1         # each input onto [-1, 1]
    ak = act(Wk a(k-1) + bk),  k = 1 .. L            # act: activation; the last layer output_activation
    f(x) = aL[0] * y_sd + y_mu

Every step is a tape operation on the file's numbers, so no rounded constant (like
2 / (in_hi - in_lo)) is ever derived: interval evaluation encloses the real network. Where every
``in_hi - in_lo`` is a double exactly, the scaling is the network's own first steps, so that the
objective is exactly ``y_sd . network(x) + y_mu`` and the search bounds it through the layers too
(:mod:`.network_bounds`); else it is recorded before the network.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import model as api
from .model import ACTIVATIONS, Expr, Model
from .network import Elementwise, Layer, Network
from .problem import Problem, ProblemError

ANN_KEYS = frozenset({"layers", "W", "b", "in_lo", "in_hi", "y_mu", "y_sd"})


def is_ann(document: dict) -> bool:
    """Whether a parsed JSON file looks like an ANN file rather than a problem file."""
    return "layers" in document or "W" in document


def ann_problem(document: dict, where: str, default_name: str = "ann", origin: str = "") -> Problem:
    """The problem an ANN document describes (see the module doc); ``where`` names it in messages."""
    network = AnnNetwork.from_document(document, where)
    name = document.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise ProblemError(f"{where}: name must be a non-empty string")
    optimum = document.get("ann_min_f")
    if optimum is not None and not _finite(optimum):
        raise ProblemError(f"{where}: ann_min_f must be a finite number")
    x_optimum = document.get("ann_min_x")
    if x_optimum is not None:
        _check_vector(x_optimum, len(network.in_lo), where, "ann_min_x")
    model = Model(name)
    x = [model.variable(lo, hi) for lo, hi in zip(network.in_lo, network.in_hi)]
    model.minimize(network.output(x))
    return model.problem(name, optimum=optimum, x_optimum=x_optimum, origin=origin)


@dataclass(frozen=True)
class AnnNetwork:
    """A checked ANN document: its dense layers and scalings, ready to be recorded on a model's variables."""

    network: Network
    in_lo: list[float]
    in_hi: list[float]
    y_mu: float
    y_sd: float

    @classmethod
    def from_document(cls, document: dict, where: str) -> AnnNetwork:
        """The network of an ANN document; ProblemError naming ``where`` for anything malformed."""
        missing = sorted(ANN_KEYS - set(document))
        if missing:
            raise ProblemError(f"{where}: an ANN file needs the keys {', '.join(missing)}")
        layers = document["layers"]
        if not (
            isinstance(layers, list)
            and len(layers) >= 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in layers)
        ):
            raise ProblemError(f"{where}: layers must be a list of at least two positive integers")
        if layers[-1] != 1:
            raise ProblemError(f"{where}: the last layer must have 1 output (the objective), not {layers[-1]}")
        depth = len(layers) - 1
        weights, biases = document["W"], document["b"]
        if not (
            isinstance(weights, list) and len(weights) == depth and isinstance(biases, list) and len(biases) == depth
        ):
            raise ProblemError(f"{where}: W and b must be lists of {depth} layers (layers has {len(layers)} sizes)")
        for k in range(depth):
            _check_matrix(weights[k], layers[k + 1], layers[k], where, f"W[{k}]")
            _check_vector(biases[k], layers[k + 1], where, f"b[{k}]")
        n_in = layers[0]
        in_lo = _per_input(document["in_lo"], n_in, where, "in_lo")
        in_hi = _per_input(document["in_hi"], n_in, where, "in_hi")
        for i, (lo, hi) in enumerate(zip(in_lo, in_hi)):
            if not lo < hi:
                raise ProblemError(f"{where}: input {i} has in_lo {lo!r} >= in_hi {hi!r}")
        hidden = _activation(document.get("activation", "tanh"), where, "activation")
        last = _activation(document.get("output_activation", "linear"), where, "output_activation")
        layers = tuple(
            Layer(np.array(weights[k], np.float64), np.array(biases[k], np.float64), last if k == depth - 1 else hidden)
            for k in range(depth)
        )
        return cls(
            network=Network(n_in, layers, where),
            in_lo=in_lo,
            in_hi=in_hi,
            y_mu=_per_input(document["y_mu"], 1, where, "y_mu")[0],
            y_sd=_per_input(document["y_sd"], 1, where, "y_sd")[0],
        )

    def output(self, x: Sequence[Expr]) -> Expr:
        """The network's output at the inputs ``x``, recorded as model expressions (the module doc)."""
        scaled = self.scaled_network()
        values = self.network(api.scale_inputs(x, self.in_lo, self.in_hi)) if scaled is None else scaled(x)
        return api.unscale_outputs(values, self.y_mu, self.y_sd)[0]

    def scaled_network(self) -> Network | None:
        """The network with the input scaling as its first steps, ``x - in_lo``, ``* 2``,
        ``/ (in_hi - in_lo)`` and ``- 1``, where every ``in_hi - in_lo`` is a double exactly; else None."""
        widths = [hi - lo for lo, hi in zip(self.in_lo, self.in_hi)]
        if any(Fraction(w) != Fraction(hi) - Fraction(lo) for w, lo, hi in zip(widths, self.in_lo, self.in_hi)):
            return None
        n = self.network.n_inputs
        scaling = (
            Elementwise("sub", np.array(self.in_lo)),
            Elementwise("mul", np.full(n, 2.0)),
            Elementwise("div", np.array(widths)),
            Elementwise("sub", np.ones(n)),
        )
        return Network(n, scaling + self.network.steps, self.network.name)


def _finite(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _check_vector(values, size: int, where: str, what: str) -> None:
    if not (isinstance(values, list) and len(values) == size and all(_finite(v) for v in values)):
        raise ProblemError(f"{where}: {what} must be a list of {size} finite numbers")
    if any(isinstance(v, int) and float(v) != v for v in values):
        raise ProblemError(f"{where}: {what} holds an integer that is not a double")


def _check_matrix(rows, out: int, inputs: int, where: str, what: str) -> None:
    if not (isinstance(rows, list) and len(rows) == out):
        raise ProblemError(f"{where}: {what} must have shape ({out}, {inputs}) = (outputs, inputs)")
    for row in rows:
        if not (isinstance(row, list) and len(row) == inputs):
            raise ProblemError(f"{where}: {what} must have shape ({out}, {inputs}) = (outputs, inputs)")
        _check_vector(row, inputs, where, what)


def _per_input(value, size: int, where: str, what: str) -> list[float]:
    values = [value] * size if not isinstance(value, list) else value
    _check_vector(values, size, where, what if size == 1 else f"{what} (a number or {size} numbers)")
    return [float(v) for v in values]


def _activation(value, where: str, what: str) -> str:
    if value not in ACTIVATIONS:
        raise ProblemError(f"{where}: {what} must be one of {', '.join(ACTIVATIONS)}, not {value!r}")
    return value
