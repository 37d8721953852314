"""Looking for a counterexample of a VNN-LIB region before proving there is none.

Projected gradient descent on the region's margin ``m(x) = max over atoms of (c . N(x) + d)``
(:mod:`.verify`), in floating point with numpy: from the box's centre and uniform random starts,
sign steps (the box's width times a shrinking factor) against m's gradient, each clipped into the
box. With a sampler (on a GPU: :meth:`pbbflow.gpu.spatial.network_bounds.DeviceNetworkBounds.sample_margins`,
many thousands of low-discrepancy points of the box), a sampled point of margin <= 0 is a candidate
at once, and the descent starts from the samples of least margin instead of random points, with steps
scaled to the samples' spacing: it finds narrow regions of counterexamples that a flat margin
hides from the gradient. The points whose margin
is <= 0 in floating point are only candidates: :func:`.verify` checks each against the exact
property before it answers ``sat``, so rounding here can cost a search, never a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .model import enclose
from .network import Network, forms_and_gradient
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


Sampler = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def candidates(network: Network, region: Region, seed: int = 0, sample: Sampler | None = None) -> np.ndarray:
    """Points of the region's box whose margin is <= 0 in floating point (k x n_inputs, least
    margin first, at most ``CANDIDATES``; none when neither the samples nor the descent found one).
    ``sample(lower, upper, c, d)``: points of the box and their margins (module doc)."""
    box = inner_box(region)
    if box is None or not region.atoms:
        return np.empty((0, network.n_inputs))
    lower, upper = box
    c = np.array([[float(atom.coefficients.get(j, 0)) for j in range(network.n_outputs)] for atom in region.atoms])
    d = np.array([float(atom.constant) for atom in region.atoms])
    step = FIRST_STEP * (upper - lower)
    if sample is None:
        x = np.random.default_rng(seed).uniform(lower, upper, (STARTS, len(lower)))
    else:
        points, margins = sample(lower, upper, c, d)
        hits = np.flatnonzero(margins <= 0)
        if len(hits):
            return points[hits[np.argsort(margins[hits], kind="stable")[:CANDIDATES]]]
        best = np.argpartition(margins, STARTS - 2)[: STARTS - 1] if len(margins) >= STARTS else np.arange(len(margins))
        x = np.concatenate([np.zeros((1, len(lower))), points[best]])
        step = step * len(margins) ** (-1.0 / len(lower))  # within the samples' spacing
    x[0] = 0.5 * (lower + upper)
    with np.errstate(all="ignore"):
        for _ in range(STEPS + 1):
            margin, gradient = forms_and_gradient(network, c, d, x)
            hits = np.flatnonzero(margin <= 0)
            if len(hits):
                return x[hits[np.argsort(margin[hits], kind="stable")[:CANDIDATES]]]
            x = np.clip(x - step * np.sign(gradient), lower, upper)
            step = step * STEP_FACTOR
    return np.empty((0, network.n_inputs))
