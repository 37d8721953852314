"""Looking for a counterexample of a VNN-LIB region before proving there is none.

Projected gradient descent on the region's margin ``m(x) = max over atoms of (c . N(x) + d)``
(:mod:`.verify`), in floating point with numpy: from the box's centre and uniform random starts,
sign steps (the box's width times a shrinking factor) against m's gradient, each clipped into the
box. The points whose margin is <= 0 in floating point are only candidates: :func:`.verify` checks
each against the exact property before it answers ``sat``, so rounding here can cost a search, never
a wrong answer.
"""

from __future__ import annotations

import numpy as np

from .model import enclose
from .network import ELEMENTWISE, Activation, Elementwise, Layer, Network
from .vnnlib import Region

STARTS = 64  # the centre and this many uniform random starts less one
STEPS = 40  # sign steps from each
FIRST_STEP = 0.25  # the first step, as a share of the box's width; each later one is STEP_FACTOR times it
STEP_FACTOR = 0.9
CANDIDATES = 4  # at most this many points (least margin first) go to the exact check


def inner_box(region: Region) -> tuple[np.ndarray, np.ndarray] | None:
    """The largest box of doubles inside the region's box; None where it holds no double."""
    lower = np.array([enclose(a)[1] for a in region.lower])
    upper = np.array([enclose(b)[0] for b in region.upper])
    return (lower, upper) if np.all(lower <= upper) else None


def candidates(network: Network, region: Region, seed: int = 0) -> np.ndarray:
    """Points of the region's box whose margin is <= 0 in floating point (k x n_inputs, least
    margin first, at most ``CANDIDATES``; none when the descent found none)."""
    box = inner_box(region)
    if box is None or not region.atoms:
        return np.empty((0, network.n_inputs))
    lower, upper = box
    c = np.array([[float(atom.coefficients.get(j, 0)) for j in range(network.n_outputs)] for atom in region.atoms])
    d = np.array([float(atom.constant) for atom in region.atoms])
    rng = np.random.default_rng(seed)
    x = rng.uniform(lower, upper, (STARTS, len(lower)))
    x[0] = 0.5 * (lower + upper)
    step = FIRST_STEP * (upper - lower)
    found, found_margin = [], []
    with np.errstate(all="ignore"):
        for _ in range(STEPS + 1):
            margin, gradient = margin_and_gradient(network, c, d, x)
            hits = np.flatnonzero(margin <= 0)
            if len(hits):
                found.append(x[hits])
                found_margin.append(margin[hits])
                break
            x = np.clip(x - step * np.sign(gradient), lower, upper)
            step = step * STEP_FACTOR
    if not found:
        return np.empty((0, network.n_inputs))
    points, margins = np.concatenate(found), np.concatenate(found_margin)
    return points[np.argsort(margins, kind="stable")[:CANDIDATES]]


def margin_and_gradient(network: Network, c: np.ndarray, d: np.ndarray, x: np.ndarray):
    """The margin ``max_k (c[k] . N(x) + d[k])`` at each row of ``x`` (B x n) and its gradient
    there (of the form attaining the max), in floating point."""
    values, saved = x, []
    for step in network.steps:
        saved.append(values)
        values = _forward(step, values)
    forms = values @ c.T + d
    best = np.argmax(forms, axis=1)
    gradient = c[best]
    for step, before in zip(reversed(network.steps), reversed(saved)):
        gradient = _backward(step, before, gradient)
    return forms[np.arange(len(x)), best], gradient


def _forward(step, values: np.ndarray) -> np.ndarray:
    if isinstance(step, Layer):
        z = values @ step.weights.T
        return _activate(step.activation, step.alpha, z if step.bias is None else z + step.bias)
    if isinstance(step, Elementwise):
        return ELEMENTWISE[step.op](values, step.constant)
    assert isinstance(step, Activation)
    return _activate(step.activation, step.alpha, values)


def _backward(step, before: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """The gradient with respect to ``before`` (the step's input) from the one of its output."""
    if isinstance(step, Layer):
        z = before @ step.weights.T
        z = z if step.bias is None else z + step.bias
        return (gradient * _slope(step.activation, step.alpha, z)) @ step.weights
    if isinstance(step, Elementwise):
        return gradient * _ELEMENTWISE_SLOPE[step.op](step.constant)
    return gradient * _slope(step.activation, step.alpha, before)


_ELEMENTWISE_SLOPE = {
    "add": np.ones_like,
    "sub": np.ones_like,
    "rsub": lambda c: -np.ones_like(c),
    "mul": lambda c: c,
    "div": lambda c: 1.0 / c,
}


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
