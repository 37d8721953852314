"""Second-order bounds of f over whole boxes: f and its gradient at a point of the box, and a lower
bound on f's curvature over the box from an interval Hessian.

For x and p in a box X, Taylor's theorem with the Lagrange remainder gives
f(x) = f(p) + g . t + t' H(xi) t / 2 with t = x - p, g = grad f(p) and xi in X. For every symmetric
M in the interval Hessian [H] of f over X, t' M t >= sum_i s_i t_i^2 with

    s_i = lo(H_ii) - sum_{j != i} max|H_ij| w_j / w_i        (w: the box's widths),

because |t_i t_j| <= (t_i^2 w_j / w_i + t_j^2 w_i / w_j) / 2 (scaled Gershgorin). So

    f(x) >= lo f(p) + sum_i min over t_i in [lo_i - p_i, hi_i - p_i] of (g_i t_i + s_i t_i^2 / 2),

a sum of one-dimensional minima of quadratics, each computed with outward rounding. Where f is
convex over X (every s_i >= 0) and p is a minimizer of f, the bound is f(p) up to rounding: the
boxes around a minimizer are pruned whole, instead of being split down to the width where the mean
value form's error (of the order of the width squared) passes under the gap (the cluster effect).

The interval Hessian comes from second-order forward differentiation of the tape with the
interval operations of :mod:`.interval`. Where the tape has no second derivative over the box (a
kink of abs, relu, min or max inside, atan2, a division by an interval holding 0, a code this
module does not know) the box gets no bound here (-inf).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from . import interval as iv
from .bounds import _unary_derivative, _values
from .opcodes import (
    _ABS,
    _ADD,
    _CONST,
    _COS,
    _DIV,
    _EXP,
    _LOG,
    _MAX,
    _MIN,
    _MUL,
    _NEG,
    _POWI,
    _RELU,
    _SIGMOID,
    _SIN,
    _SQRT,
    _SUB,
    _TAN,
    _TANH,
    _VAR,
)
from .tape import Tape

jit = numba.njit(cache=True, nogil=True)


@jit
def _unary_terms(code: int, alo: float, ahi: float, vlo: float, vhi: float, k: int):
    """(phi', phi'') of v = phi(a) over a as enclosures (v: phi's value there), and whether they
    exist; phi' is the mean value form's (:func:`.bounds._unary_derivative`)."""
    if not (
        code == _EXP
        or code == _POWI
        or code == _TANH
        or code == _SIGMOID
        or code == _SIN
        or code == _COS
        or code == _TAN
        or ((code == _SQRT or code == _LOG) and alo > 0.0)
    ):
        return 0.0, 0.0, 0.0, 0.0, False
    d1lo, d1hi, _ = _unary_derivative(code, alo, ahi, vlo, vhi, k)
    if code == _EXP:
        return d1lo, d1hi, vlo, vhi, True
    if code == _POWI:  # k (k - 1) a^(k - 2)
        if k == 0 or k == 1:
            return d1lo, d1hi, 0.0, 0.0, True
        d2lo, d2hi = iv.mul(float(k) * float(k - 1), float(k) * float(k - 1), *iv.powi(alo, ahi, k - 2))
        return d1lo, d1hi, d2lo, d2hi, True
    if code == _SQRT:  # -1 / (4 v^3)
        d2lo, d2hi = iv.div(-0.25, -0.25, *iv.powi(vlo, vhi, 3))
        return d1lo, d1hi, d2lo, d2hi, True
    if code == _LOG:  # -1 / a^2
        d2lo, d2hi = iv.div(-1.0, -1.0, *iv.powi(alo, ahi, 2))
        return d1lo, d1hi, d2lo, d2hi, True
    if code == _TANH:  # -2 v (1 - v^2) = -2 v phi'
        d2lo, d2hi = iv.mul(*iv.mul(-2.0, -2.0, vlo, vhi), d1lo, d1hi)
        return d1lo, d1hi, d2lo, d2hi, True
    if code == _SIGMOID:  # v (1 - v) (1 - 2 v) = phi' (1 - 2 v)
        d2lo, d2hi = iv.mul(d1lo, d1hi, *iv.sub(1.0, 1.0, *iv.mul(2.0, 2.0, vlo, vhi)))
        return d1lo, d1hi, d2lo, d2hi, True
    if code == _TAN:  # 2 v (1 + v^2) = 2 v phi'
        d2lo, d2hi = iv.mul(*iv.mul(2.0, 2.0, vlo, vhi), d1lo, d1hi)
        return d1lo, d1hi, d2lo, d2hi, True
    return d1lo, d1hi, -vhi, -vlo, True  # SIN and COS: phi'' = -phi


@jit
def _copy_slot(k, a, n_vars, hessians, glo, ghi, hlo, hhi):
    for j in range(n_vars):
        glo[k, j], ghi[k, j] = glo[a, j], ghi[a, j]
        for m in range(j, n_vars if hessians else j):
            hlo[k, j, m], hhi[k, j, m] = hlo[a, j, m], hhi[a, j, m]


@jit
def _linear_op(code, alo, ahi, blo, bhi):
    if code == _ADD:
        return iv.add(alo, ahi, blo, bhi)
    if code == _SUB:
        return iv.sub(alo, ahi, blo, bhi)
    return -ahi, -alo  # NEG


@jit
def _linear(k, a, b, code, n_vars, hessians, glo, ghi, hlo, hhi):
    """Slot k = slot a + slot b, slot a - slot b or -slot a (b unused): its gradient and Hessian."""
    b = a if code == _NEG else b
    for j in range(n_vars):
        glo[k, j], ghi[k, j] = _linear_op(code, glo[a, j], ghi[a, j], glo[b, j], ghi[b, j])
        for m in range(j, n_vars if hessians else j):
            hlo[k, j, m], hhi[k, j, m] = _linear_op(code, hlo[a, j, m], hhi[a, j, m], hlo[b, j, m], hhi[b, j, m])


@jit
def _product(k, a, b, alo, ahi, blo, bhi, n_vars, hessians, glo, ghi, hlo, hhi):
    """Slot k = slot a * slot b (values [alo, ahi], [blo, bhi]): its Hessian, then its gradient
    (in that order, so that k may be b: the division's reciprocal)."""
    if hessians:
        for j in range(n_vars):
            for m in range(j, n_vars):
                lo, hi = iv.add(
                    *iv.mul(alo, ahi, hlo[b, j, m], hhi[b, j, m]), *iv.mul(blo, bhi, hlo[a, j, m], hhi[a, j, m])
                )
                lo, hi = iv.add(lo, hi, *iv.mul(glo[a, j], ghi[a, j], glo[b, m], ghi[b, m]))
                lo, hi = iv.add(lo, hi, *iv.mul(glo[b, j], ghi[b, j], glo[a, m], ghi[a, m]))
                hlo[k, j, m], hhi[k, j, m] = lo, hi
    for j in range(n_vars):
        glo[k, j], ghi[k, j] = iv.add(*iv.mul(alo, ahi, glo[b, j], ghi[b, j]), *iv.mul(blo, bhi, glo[a, j], ghi[a, j]))


@jit
def _chain(k, a, d1lo, d1hi, d2lo, d2hi, n_vars, hessians, glo, ghi, hlo, hhi):
    """Slot k = phi(slot a) with phi' in [d1lo, d1hi] and phi'' in [d2lo, d2hi] over slot a."""
    if hessians:
        for j in range(n_vars):
            for m in range(j, n_vars):
                if m == j:
                    slo, shi = iv.powi(glo[a, j], ghi[a, j], 2)
                else:
                    slo, shi = iv.mul(glo[a, j], ghi[a, j], glo[a, m], ghi[a, m])
                hlo[k, j, m], hhi[k, j, m] = iv.add(
                    *iv.mul(d2lo, d2hi, slo, shi), *iv.mul(d1lo, d1hi, hlo[a, j, m], hhi[a, j, m])
                )
    for j in range(n_vars):
        glo[k, j], ghi[k, j] = iv.mul(d1lo, d1hi, glo[a, j], ghi[a, j])


@jit
def _run_second_order(
    op, arg0, arg1, const_lo, const_hi, x_lo, x_hi, over_box, side, vlo, vhi, glo, ghi, hlo, hhi
) -> bool:
    """Values (``vlo, vhi``: slot, 1), gradients and, ``over_box``, the upper triangles of the
    Hessians of every slot over the box [x_lo, x_hi], as enclosures; False where some slot has no
    second derivative over the box. A box's run records in ``side`` the piece of each kink (abs,
    relu, min, max) that the box lies in; a point's run (not ``over_box``, x_lo = x_hi a point of
    the last box run) takes the same pieces, so that its gradient is that of f over the box even
    where the point sits on a kink at the box's edge."""
    n_vars = len(x_lo)
    for k in range(len(op)):
        code, a, b = op[k], arg0[k], arg1[k]
        if code == _VAR or code == _CONST:
            if code == _VAR:
                vlo[k, 0], vhi[k, 0] = x_lo[a], x_hi[a]
            else:
                vlo[k, 0], vhi[k, 0] = const_lo[a], const_hi[a]
            for j in range(n_vars):
                unit = 1.0 if code == _VAR and j == a else 0.0
                glo[k, j], ghi[k, j] = unit, unit
                for m in range(j, n_vars if over_box else j):
                    hlo[k, j, m], hhi[k, j, m] = 0.0, 0.0
            continue
        _values(code, a, b, k, 1, vlo, vhi)
        if iv.is_empty(vlo[k, 0], vhi[k, 0]):
            return False
        if code == _ADD or code == _SUB or code == _NEG:
            _linear(k, a, b, code, n_vars, over_box, glo, ghi, hlo, hhi)
        elif code == _MUL:
            _product(k, a, b, vlo[a, 0], vhi[a, 0], vlo[b, 0], vhi[b, 0], n_vars, over_box, glo, ghi, hlo, hhi)
        elif code == _DIV:  # a * r with r = 1 / b: r' = -r^2, r'' = 2 r^3 (as functions of b)
            if not (vlo[b, 0] > 0.0 or vhi[b, 0] < 0.0):
                return False
            rlo, rhi = iv.div(1.0, 1.0, vlo[b, 0], vhi[b, 0])
            d1lo, d1hi = iv.neg(*iv.powi(rlo, rhi, 2))
            d2lo, d2hi = iv.mul(2.0, 2.0, *iv.powi(rlo, rhi, 3))
            _chain(k, b, d1lo, d1hi, d2lo, d2hi, n_vars, over_box, glo, ghi, hlo, hhi)  # slot k holds r for now
            _product(k, a, k, vlo[a, 0], vhi[a, 0], rlo, rhi, n_vars, over_box, glo, ghi, hlo, hhi)
        elif code == _MIN or code == _MAX:  # the box on one side of a = b: f is a or b there
            if over_box:
                a_smaller, b_smaller = vhi[a, 0] <= vlo[b, 0], vhi[b, 0] <= vlo[a, 0]
                if not (a_smaller or b_smaller):
                    return False
                side[k] = 0 if a_smaller == (code == _MIN) else 1
            _copy_slot(k, a if side[k] == 0 else b, n_vars, over_box, glo, ghi, hlo, hhi)
        elif code == _ABS or code == _RELU:  # linear on each side of 0
            if over_box:
                side[k] = 1 if vlo[a, 0] >= 0.0 else -1 if vhi[a, 0] <= 0.0 else 0
                if side[k] == 0:
                    return False
            slope = 1.0 if side[k] > 0 else -1.0 if code == _ABS else 0.0
            _chain(k, a, slope, slope, 0.0, 0.0, n_vars, over_box, glo, ghi, hlo, hhi)
        else:
            d1lo, d1hi, d2lo, d2hi, exists = _unary_terms(code, vlo[a, 0], vhi[a, 0], vlo[k, 0], vhi[k, 0], b)
            if not exists:
                return False
            _chain(k, a, d1lo, d1hi, d2lo, d2hi, n_vars, over_box, glo, ghi, hlo, hhi)
    return True


@jit
def _curvatures(hlo, hhi, slot, lo, hi, curvature) -> None:
    """Lower bounds ``curvature[i]`` of t' H t >= sum_i curvature[i] t_i^2 over the box (scaled
    Gershgorin on slot's interval Hessian; a side of width 0 holds t_i = 0 and takes no part)."""
    n_vars = len(lo)
    for i in range(n_vars):
        w_i = hi[i] - lo[i]
        off = 0.0
        for j in range(n_vars):
            w_j = hi[j] - lo[j]
            if j == i or w_i == 0.0 or w_j == 0.0:
                continue
            r, c = min(i, j), max(i, j)
            size = max(abs(hlo[slot, r, c]), abs(hhi[slot, r, c]))
            off = iv.add_up(
                off, iv.mul_up(size, iv.div_up(w_j, w_i))
            )  # up both ways: each pair's weights multiply to >= 1
        curvature[i] = iv.add_down(hlo[slot, i, i], -off) if w_i > 0.0 else 0.0


@jit
def _quadratic_minimum(glo: float, ghi: float, s: float, tlo: float, thi: float) -> float:
    """A lower bound of g t + s t^2 / 2 over g in [glo, ghi] and t in [tlo, thi] (-inf on NaN)."""
    half_s = iv.mul_down(0.5, s)
    best = math.inf
    for g in (glo, ghi):
        for t in (tlo, thi):
            square = iv.mul_up(t, t) if half_s < 0.0 else iv.mul_down(t, t)
            best = min(best, iv.add_down(iv.mul_down(g, t), iv.mul_down(half_s, square)))
        if s > 0.0:
            vertex_lo, vertex_hi = iv.div(-g, -g, s, s)
            if vertex_lo <= thi and vertex_hi >= tlo:  # the vertex may lie inside: its value -g^2 / (2 s)
                best = min(best, -iv.div_up(iv.mul_up(g, g), iv.mul_down(2.0, s)))
    return best if best == best else -math.inf


@jit
def _eigen_curvature(hlo, hhi, slot, n_vars) -> float:
    """A lower bound of t' H t / |t|^2 over the interval Hessian (-inf when none is found):
    lambda_min(midpoint) - rho(radius), the first certified by an interval Cholesky factorization
    of midpoint - sigma I (it succeeds only if the matrix is positive definite) and rho bounded by
    the radius' largest row sum. Sharper than the rows' bounds where the sides are coupled."""
    centre = np.empty((n_vars, n_vars))
    radius_rows = np.zeros(n_vars)
    for i in range(n_vars):
        for j in range(n_vars):
            lo, hi = hlo[slot, min(i, j), max(i, j)], hhi[slot, min(i, j), max(i, j)]
            if not (math.isfinite(lo) and math.isfinite(hi)):
                return -math.inf
            centre[i, j] = 0.5 * lo + 0.5 * hi
            radius_rows[i] = iv.add_up(radius_rows[i], max(iv.add_up(hi, -centre[i, j]), iv.add_up(centre[i, j], -lo)))
    rho = radius_rows.max()
    smallest = np.linalg.eigvalsh(centre)[0]
    sigma = smallest - 1e-9 * (abs(smallest) + np.abs(centre).max())  # below it, so that the factorization succeeds
    factor_lo, factor_hi = np.zeros((n_vars, n_vars)), np.zeros((n_vars, n_vars))
    for j in range(n_vars):
        plo, phi = iv.sub(centre[j, j], centre[j, j], sigma, sigma)
        for k in range(j):
            plo, phi = iv.sub(plo, phi, *iv.powi(factor_lo[j, k], factor_hi[j, k], 2))
        if not plo > 0.0:
            return -math.inf
        factor_lo[j, j], factor_hi[j, j] = iv.sqrt(plo, phi)
        for i in range(j + 1, n_vars):
            elo, ehi = centre[i, j], centre[i, j]
            for k in range(j):
                elo, ehi = iv.sub(elo, ehi, *iv.mul(factor_lo[i, k], factor_hi[i, k], factor_lo[j, k], factor_hi[j, k]))
            factor_lo[i, j], factor_hi[i, j] = iv.div(elo, ehi, factor_lo[j, j], factor_hi[j, j])
    return iv.add_down(sigma, -rho)


@jit
def _box_bounds(op, arg0, arg1, const_lo, const_hi, slot, lo, hi, points, lb) -> None:
    """``lb[b]`` raised to the second-order bound of slot over box b from each of its points
    ``points[b, q]`` (rows with a NaN: none), with the rows' and the eigenvalue's curvature."""
    n_slots, n_vars = len(op), lo.shape[1]
    vlo, vhi = np.empty((n_slots, 1)), np.empty((n_slots, 1))
    glo, ghi = np.empty((n_slots, n_vars)), np.empty((n_slots, n_vars))
    hlo, hhi = np.empty((n_slots, n_vars, n_vars)), np.empty((n_slots, n_vars, n_vars))
    curvature = np.empty(n_vars)
    side = np.zeros(n_slots, np.int8)
    for b in range(lo.shape[0]):
        if not _run_second_order(
            op, arg0, arg1, const_lo, const_hi, lo[b], hi[b], True, side, vlo, vhi, glo, ghi, hlo, hhi
        ):
            continue
        _curvatures(hlo, hhi, slot, lo[b], hi[b], curvature)
        eigen = _eigen_curvature(hlo, hhi, slot, n_vars)
        for q in range(points.shape[1]):
            p = points[b, q]
            if not np.all(np.isfinite(p)):
                continue
            if not _run_second_order(
                op, arg0, arg1, const_lo, const_hi, p, p, False, side, vlo, vhi, glo, ghi, hlo, hhi
            ):
                continue
            by_rows = by_eigen = vlo[slot, 0]
            for i in range(n_vars):
                tlo = iv.add_down(lo[b, i], -p[i])
                thi = iv.add_up(hi[b, i], -p[i])
                by_rows = iv.add_down(by_rows, _quadratic_minimum(glo[slot, i], ghi[slot, i], curvature[i], tlo, thi))
                by_eigen = iv.add_down(by_eigen, _quadratic_minimum(glo[slot, i], ghi[slot, i], eigen, tlo, thi))
            for total in (by_rows, by_eigen):
                if total == total:
                    lb[b] = max(lb[b], total)


def second_order_bounds(tape: Tape, lo: np.ndarray, hi: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Lower bounds of the tape's objective over each box [lo[b], hi[b]] (B, d): the best of the
    second-order bounds from the points ``points[b, q]`` (B, Q, d) of the box (NaN rows are skipped;
    -inf where no bound applies). Every point must lie in its box."""
    lb = np.full(len(lo), -math.inf)
    if not len(lo):
        return lb
    _box_bounds(
        tape.op,
        tape.arg0,
        tape.arg1,
        tape.const_lo,
        tape.const_hi,
        int(tape.objective),
        np.ascontiguousarray(lo, dtype=np.float64),
        np.ascontiguousarray(hi, dtype=np.float64),
        np.ascontiguousarray(points, dtype=np.float64),
        lb,
    )
    return lb
