"""A Lagrangian lower bound for constrained problems.

For any weights mu >= 0 and lam, every point with g <= 0 and |h| <= feas_tol satisfies
f = L - mu.g - lam.h >= L - sum |lam_j| feas_tol, where L = f + mu.g + lam.h.  So a rigorous lower
bound of L over a box, minus that slack, bounds f over the box's feasible points, whatever the
weights.  With the multipliers of a KKT point the gradient of L vanishes there, so the mean value
form of L tightens quadratically as boxes shrink around it, where f's own bound stalls next to an
equality (it can only improve with the subdomain width).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .floateval import evaluate_float_gradients
from .tape import BINARY, Op, Tape, TapeBuilder

ACTIVE = 1e-6  # inequalities within this of 0 at the point take part in the multiplier estimate
# Lagrangians an explorer bounds with at once: the multipliers of the latest few distinct points
# (G13's four symmetric optima have two sets, each sharp only near its own optima).
LAGRANGIANS = 4
SAME_WEIGHTS = 1e-2  # weights within this share of the largest are one set (the same KKT point, nearby)


@dataclass(frozen=True)
class LagrangianBound:
    """L's tape (outputs: L, then the problem's g and h, so subdomains drop as for f), the slack
    to subtract from its lower bounds (rounded up) and its weights (mu, then lam)."""

    tape: Tape
    slack: float
    weights: np.ndarray

    def same_weights(self, other: LagrangianBound) -> bool:
        """Whether ``other``'s weights are this one's up to ``SAME_WEIGHTS`` of the largest."""
        scale = max(np.abs(self.weights).max(initial=0.0), np.abs(other.weights).max(initial=0.0))
        return bool(np.abs(self.weights - other.weights).max(initial=0.0) <= SAME_WEIGHTS * scale)


def distance_scale(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The widths in which a box's distance to a Lagrangian's point is measured: the domain's, 1
    for a fixed variable (lo = hi is no distance, and no 0 / 0)."""
    width = upper - lower
    return np.where(width > 0, width, 1.0)


def nearest(lo: np.ndarray, hi: np.ndarray, points: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """For each box (rows of ``lo``, ``hi``), the index of the point of ``points`` (k, d) nearest its
    centre in the Euclidean norm relative to ``scale`` (:func:`distance_scale`), the first on ties:
    multipliers are local, each set sharp only near its own point (``gpu.spatial.phase`` computes
    the same on the device)."""
    centre = 0.5 * (lo + hi)
    return np.argmin(np.linalg.norm((centre[:, None, :] - points[None, :, :]) / scale, axis=2), axis=1)


def multipliers(tape: Tape, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Weights (mu >= 0 for the inequalities, lam for the equalities) that make the gradient of L
    smallest at ``x`` in least squares, over the equalities and the inequalities active there;
    None where the functions or their gradients (analytic, in float64) are not finite at ``x``."""
    from scipy.optimize import nnls

    values, gradients = evaluate_float_gradients(tape, np.asarray(x, dtype=np.float64))  # rows: f, g..., h...
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(gradients))):
        return None
    n_ineq = tape.n_ineq
    g = values[1 : 1 + n_ineq]
    active = [i for i in range(n_ineq) if g[i] >= -ACTIVE]
    g_rows = gradients[1 : 1 + n_ineq][active]
    h_rows = gradients[1 + n_ineq :]
    columns = np.concatenate([g_rows, h_rows, -h_rows]).T  # lam = lam_plus - lam_minus, all >= 0
    if columns.size == 0:
        return None
    weights, _ = nnls(columns, -gradients[0])
    mu = np.zeros(n_ineq)
    mu[active] = weights[: len(active)]
    n_eq = len(h_rows)
    lam = weights[len(active) : len(active) + n_eq] - weights[len(active) + n_eq :]
    return mu, lam


def _copy(tape: Tape, builder: TapeBuilder) -> list[int]:
    """Every instruction of ``tape`` emitted into ``builder``; the new slot of each old one."""
    slots: list[int] = []
    for code, a, b in zip(tape.op.tolist(), tape.arg0.tolist(), tape.arg1.tolist()):
        code = Op(code)
        if code is Op.VAR:
            slots.append(builder.var(a))
        elif code is Op.CONST:
            slots.append(builder.const(float(tape.const_lo[a]), float(tape.const_hi[a])))
        elif code is Op.POWI:
            slots.append(builder.powi(slots[a], b))
        elif code in BINARY:
            slots.append(builder.binary(code, slots[a], slots[b]))
        else:
            slots.append(builder.unary(code, slots[a]))
    return slots


def lagrangian_bound(tape: Tape, mu: np.ndarray, lam: np.ndarray, feas_tol: float) -> LagrangianBound:
    """L = f + mu.g + lam.h as a tape (mu must be >= 0) and its slack sum |lam| feas_tol."""
    if np.any(~np.isfinite(mu)) or np.any(mu < 0) or np.any(~np.isfinite(lam)):
        raise ValueError("Lagrangian weights must be finite, and those of inequalities >= 0")
    builder = TapeBuilder(tape.n_vars)
    slots = _copy(tape, builder)
    total = slots[tape.objective]
    for weight, slot in [*zip(mu.tolist(), tape.inequalities.tolist()), *zip(lam.tolist(), tape.equalities.tolist())]:
        if weight != 0.0:
            total = builder.binary(Op.ADD, total, builder.binary(Op.MUL, builder.const(weight), slots[slot]))
    slack = math.fsum(abs(v) for v in lam.tolist()) * feas_tol
    slack = math.nextafter(math.nextafter(slack, math.inf), math.inf)  # above the sum's and product's rounding
    return LagrangianBound(
        tape=builder.build(
            total, [slots[s] for s in tape.inequalities.tolist()], [slots[s] for s in tape.equalities.tolist()]
        ),
        slack=slack,
        weights=np.concatenate([mu, lam]),
    )
