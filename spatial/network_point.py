"""A network objective's f and gradient at one point in one compiled loop: the local solver's
evaluation (:func:`point_gradients`), 5-10 us a point where numpy takes a call a step. Batches of
points stay with numpy (:func:`.network.forms_and_gradient`), whose vectorised tanh is 3-7x faster
from 64 points. Imported when first used: ``--help`` loads no numba."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from .network import Network, NetworkObjective
from .network_bounds import (
    _ADD,
    _LEAKY,
    _MUL,
    _RSUB,
    _SIGMOID,
    _SUB,
    _TANH,
    _Affine,
    _Elementwise,
    _operations,
)

_AFFINE, _ELEMENTWISE, _ACTIVATION = 0, 1, 2  # an operation's kind in the compiled loop


@dataclass(frozen=True, eq=False)
class FlatNetwork:
    """A network's operations (:func:`.network_bounds._operations`, with their codes; linear
    activations dropped) as flat arrays for compiled loops (:attr:`arrays`, in this order): per
    operation its kind (affine, elementwise, activation), inputs and outputs, the offset of its
    weights in ``weights`` (row-major (out, in)) and of its bias or constant in ``vectors``, its
    activation's or elementwise operation's code, and alpha."""

    kind: np.ndarray
    n_in: np.ndarray
    n_out: np.ndarray
    weight_at: np.ndarray
    vector_at: np.ndarray
    code: np.ndarray
    alpha: np.ndarray
    weights: np.ndarray
    vectors: np.ndarray

    @classmethod
    def of(cls, network: Network) -> FlatNetwork:
        columns: list[list] = [[] for _ in range(7)]
        weights, vectors = [np.zeros(0)], [np.zeros(0)]
        w_size = v_size = 0
        size = network.n_inputs
        for op in _operations(network):
            n_in, weight_at, vector_at, code, alpha = size, -1, -1, 0, 0.0
            if isinstance(op, _Affine):
                kind, size = _AFFINE, len(op.bias)
                weight_at, w_size = w_size, w_size + op.weights.size
                vector_at, v_size = v_size, v_size + size
                weights.append(op.weights.ravel())
                vectors.append(op.bias)
            elif isinstance(op, _Elementwise):
                kind, code = _ELEMENTWISE, op.code
                vector_at, v_size = v_size, v_size + size
                vectors.append(op.constant)
            else:
                kind, code, alpha = _ACTIVATION, op.code, op.alpha
            for column, value in zip(columns, (kind, n_in, size, weight_at, vector_at, code, alpha)):
                column.append(value)
        ints = [np.array(column, dtype=np.int64) for column in columns[:6]]
        flat = [np.ascontiguousarray(np.concatenate(parts), dtype=np.float64) for parts in (weights, vectors)]
        return cls(*ints, np.array(columns[6], dtype=np.float64), *flat)

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays in the order the compiled loop takes them."""
        return (
            self.kind,
            self.n_in,
            self.n_out,
            self.weight_at,
            self.vector_at,
            self.code,
            self.alpha,
            self.weights,
            self.vectors,
        )


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _activate_at(code: int, alpha: float, z: float) -> float:
    if code == _LEAKY:  # relu: alpha 0, and 0 below (never 0 * -inf); NaN stays NaN
        if z > 0 or z != z:
            return z
        return alpha * z if alpha != 0.0 else 0.0
    if code == _TANH:
        return math.tanh(z)
    if code == _SIGMOID:
        return 0.5 * (1.0 + math.tanh(0.5 * z))
    # softplus: log(1 + e^z), without overflow
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _slope_at(code: int, alpha: float, z: float) -> float:
    if code == _LEAKY:
        return 1.0 if z > 0 else alpha
    if code == _TANH:
        t = math.tanh(z)
        return 1.0 - t * t
    s = 0.5 * (1.0 + math.tanh(0.5 * z))  # softplus' slope is the sigmoid
    return s * (1.0 - s) if code == _SIGMOID else s


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _elementwise_at(code: int, value: float, constant: float) -> float:
    if code == _ADD:
        return value + constant
    if code == _SUB:
        return value - constant
    if code == _RSUB:
        return constant - value
    if code == _MUL:
        return value * constant
    return value / constant


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _elementwise_slope_at(code: int, constant: float) -> float:
    if code == _ADD or code == _SUB:
        return 1.0
    if code == _RSUB:
        return -1.0
    if code == _MUL:
        return constant
    return 1.0 / constant


@numba.njit(cache=True, nogil=True, error_model="numpy")
def form_and_gradient_at(
    kind, n_in, n_out, weight_at, vector_at, code, alpha, weights, vectors, c, d, take_max, x, gradient
):
    """:func:`.network.forms_and_gradient` at one point ``x``, compiled: the form's value, its gradient
    written into ``gradient``."""
    n_steps = len(kind)
    widest, stored = len(x), 0
    for k in range(n_steps):
        widest = max(widest, n_out[k])
        stored += n_out[k]
    inputs = np.empty(stored)  # each activation's input (at every operation's offset)
    a, b = np.empty(widest), np.empty(widest)
    a[: len(x)] = x
    at = 0
    for k in range(n_steps):
        m, n, w, v = n_out[k], n_in[k], weight_at[k], vector_at[k]
        for i in range(m):
            if kind[k] == _AFFINE:
                z = vectors[v + i]
                for j in range(n):
                    z += weights[w + i * n + j] * a[j]
                b[i] = z
            elif kind[k] == _ELEMENTWISE:
                b[i] = _elementwise_at(code[k], a[i], vectors[v + i])
            else:
                inputs[at + i] = a[i]
                b[i] = _activate_at(code[k], alpha[k], a[i])
        at += m
        a, b = b, a
    chosen, best = 0, np.nan
    for r in range(len(d)):
        form = d[r]
        for i in range(c.shape[1]):
            form += c[r, i] * a[i]
        if form != form:  # NaN: it is the value, as numpy's argmax takes it
            chosen, best = r, form
            break
        if r == 0 or (form > best if take_max else form < best):
            chosen, best = r, form
    for i in range(c.shape[1]):
        a[i] = c[chosen, i]
    for k in range(n_steps - 1, -1, -1):
        m, n, w = n_out[k], n_in[k], weight_at[k]
        at -= m
        if kind[k] == _ELEMENTWISE:
            for i in range(m):
                a[i] *= _elementwise_slope_at(code[k], vectors[vector_at[k] + i])
        elif kind[k] == _ACTIVATION:
            for i in range(m):
                a[i] *= _slope_at(code[k], alpha[k], inputs[at + i])
        else:
            b[:n] = 0.0
            for i in range(m):
                if a[i] != 0.0:
                    for j in range(n):
                        b[j] += a[i] * weights[w + i * n + j]
            a, b = b, a
    gradient[:] = a[: len(x)]
    return best


def point_gradients(objective: NetworkObjective, n_vars: int) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The function giving ``objective`` at a point (all ``n_vars`` variables) as one output and its
    Jacobian (1 x n_vars), in floating point, compiled (:func:`form_and_gradient_at`)."""
    inputs = np.array(objective.inputs, dtype=np.int64)
    arguments = (
        *FlatNetwork.of(objective.network).arrays,
        np.ascontiguousarray(objective.c),
        np.ascontiguousarray(objective.d),
        objective.combine == "max",
    )

    def value_and_jacobian(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        point = np.asarray(x, dtype=np.float64)
        if point.shape != (n_vars,):
            raise ValueError(f"the point has shape {point.shape}; the objective needs ({n_vars},)")
        gradient = np.empty(len(inputs))
        value = form_and_gradient_at(*arguments, point[inputs], gradient)
        jacobian = np.zeros((1, n_vars))
        jacobian[0, inputs] = gradient
        return np.array([value]), jacobian

    return value_and_jacobian
