"""Rigorous backward linear bounds of a :class:`.network.Network` over an input box (CROWN-style).

The method is the backward linear relaxation of the verification literature: CROWN (H. Zhang,
T.-W. Weng, P.-Y. Chen, C.-J. Hsieh, L. Daniel, "Efficient Neural Network Robustness Certification
with General Activation Functions", NeurIPS 2018) and DeepPoly (G. Singh, T. Gehr, M. Püschel,
M. Vechev, "An Abstract Domain for Certifying Neural Networks", POPL 2019). Written here from the
papers, in floating point with every step rounded outward.

The network is a chain of operations v_0 = x, v_{k+1} = op_k(v_k): affine maps (a :class:`Layer`'s
``W v + b``), elementwise constants (:class:`Elementwise`) and activations. Each activation gets
two lines ``sl z + bl <= act(z) <= su z + bu`` valid on its input interval [l, u]. A bound of
``c . v_K + d`` is carried backward as ``c . v_K + d >= lam . v_k + beta`` for every x in the box
(lam a float vector, beta a float), step by step down to the input, where ``lam . x + beta`` is
minimised over the box. The bounds of each activation's input are found the same way (rows
``+-e_j`` started at that node: CROWN proper) and intersected with interval arithmetic.

Why each step is sound (real arithmetic on the stored doubles is what is bounded):

- **Affine step** ``v = W y + b``: ``lam . v = (lam W) . y + lam . b``. ``M = fl(lam [W b])`` comes
  from numpy's matmul (BLAS); it computes each entry as a floating-point sum of n products in some
  order, with or without fma (no Strassen-like scheme: true of OpenBLAS, MKL and numpy's loops), so
  ``|M - lam [W b]| <= gamma_n |lam| [|W| |b|] + 2 n eta`` (Higham, Accuracy and Stability, §3.1;
  gamma_n = n u / (1 - n u), u = 2^-53; eta = 2^-1075 bounds the absolute error of a rounding
  into the subnormal range, one per product, grown at most twofold by the later additions).
  ``S = fl(|lam| [|W| |b|])`` (exact absolute values, the same matmul) is >= (1 - gamma_n) times the
  true product minus 2 n eta, so the error is at most ``E = K S + T`` with K >= gamma_n / (1 -
  gamma_n) rounded up and T = 4 n eta (:func:`_matmul_error_constants`). Then
  ``lam . v >= M_y . y + M_b - sum_j E_j max|y_j|`` with max|y_j| from y's rigorous bounds; the
  sum and the constant are formed with the directed operations of :mod:`.interval`.
- **Activation** ``z = act(y)``: each term ``lam_j z_j`` is at least ``lam_j (sl_j y_j + bl_j)``
  where lam_j >= 0 and ``lam_j (su_j y_j + bu_j)`` where lam_j < 0. The new coefficient
  ``mu = fl(lam_j s_j)`` misses the real product by ``r`` in ``[mul_down - mu, mul_up - mu]``
  (rounded outward); ``r y_j`` is bounded below by interval multiplication on y_j's bounds and
  joins beta with ``mul_down(lam_j, b_j)``, all summed rounding down. Elementwise constants work
  the same way (``+ c``: beta gains ``mul_down(lam_j, c_j)``; ``* c`` and ``/ c``: a coefficient
  and its residual, the quotient's from div_down/div_up).
- **Relaxation lines** (:func:`_relax`): the slopes are any floats (chosen for tightness); the
  offsets are rigorous bounds of ``g(z) = act(z) - s z`` over [l, u]. ReLU and leaky ReLU: exact
  where [l, u] does not contain 0 in its interior; otherwise, for a convex one (alpha <= 1), the
  chord's slope above with the larger of g's endpoint values (g is convex: its maximum is at an
  end) rounded up, and below the line through 0 of slope 1 or alpha, whichever is nearer the chord
  (adaptive: u >= -l takes 1), exact; mirrored for alpha > 1. tanh, sigmoid and softplus: both
  lines take the chord's slope; [l, u] is split at 0 into pieces where act is convex (z <= 0;
  softplus everywhere) or concave (z >= 0); on a concave piece g's minimum is at an end and its
  maximum is below the tangent at the float m where act'(m) is nearest s: ``g(m) + g'(m) (z - m)``,
  bounded with interval enclosures of g(m) and g'(m) at the point m; mirrored on convex pieces.
  act, act' at points come from :mod:`.interval` (library functions widened by LIBRARY_ULPS).
- **An input scaling**: the elementwise steps before any other (:func:`_scaling_steps`) map the
  box onto a box, each coordinate on its own, and their last node's bounds enclose it, rounded
  outward. A backward pass stops there and minimises over those bounds: the same bound up to
  rounding, without those steps' work on every row (a third of rosenbrock-4-32-32-1-tanh's time).
- **The box** ``min lam . x + beta``: each term's minimum is at an end of its interval,
  ``min(mul_down(lam_j, lo_j), mul_down(lam_j, hi_j))``, summed rounding down.
- **Overflow**: a row whose coefficients are no longer finite becomes ``0 . v + (-inf)``; a unit
  whose input bounds are infinite, or whose lines overflow, takes the constant lines of act's
  range; NaN never reaches a result (the directed operations send it to -inf in a lower bound).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

import numba
import numpy as np

from ..core.blas import one_blas_thread
from . import interval as iv
from .network import Activation, Elementwise, Layer, Network, NetworkObjective

jit = numba.njit(cache=True, nogil=True)
# the per-row and per-unit helpers, which gpu/spatial/network_bounds.py also compiles for the device
# (the CPU's loops inline them)
row_jit = numba.njit(cache=True, nogil=True, inline="always")

# activation codes of the kernels (relu is leaky_relu with alpha 0; linear is no operation)
_LEAKY = 0
_TANH = 1
_SIGMOID = 2
_SOFTPLUS = 3
_ACTIVATION_CODES = {"relu": _LEAKY, "leaky_relu": _LEAKY, "tanh": _TANH, "sigmoid": _SIGMOID, "softplus": _SOFTPLUS}
# elementwise codes
_ADD = 0
_SUB = 1
_RSUB = 2
_MUL = 3
_DIV = 4
_ELEMENTWISE_CODES = {"add": _ADD, "sub": _SUB, "rsub": _RSUB, "mul": _MUL, "div": _DIV}

# about the most doubles one matrix of a pass over many boxes holds (32 MiB): NetworkBounds.box_lower_bounds
PASS_DOUBLES = 1 << 22
# the fewest boxes a thread's pass takes when a batch is shared among threads (fewer: one thread)
BOXES_A_THREAD = 64
_UNIT_ROUNDOFF = Fraction(1, 2**53)
_ETA = Fraction(1, 2**1075)


def _round_up(value: Fraction) -> float:
    """The least double >= value."""
    result = float(value)
    return result if Fraction(result) >= value else math.nextafter(result, math.inf)


def _matmul_error_constants(n: int) -> tuple[float, float]:
    """(K, T): ``|fl(A B) - A B| <= K fl(|A| |B|) + T`` entrywise for a contraction of length n
    (module doc): K >= gamma_n / (1 - gamma_n) = n u / (1 - 2 n u), T = 4 n eta."""
    nu = n * _UNIT_ROUNDOFF
    if 2 * nu >= 1:
        raise ValueError(f"a contraction of length {n} is too long for the error bound")
    return _round_up(nu / (1 - 2 * nu)), _round_up(4 * n * _ETA)


# ---------------------------------------------------------------- kernels: forward intervals


@row_jit
def _affine_row_interval(row, bias, lo, hi):
    """Rigorous bounds of ``row . y + bias`` for y in [lo, hi] (one output of an affine step)."""
    acc_lo = bias
    acc_hi = bias
    for j in range(len(row)):
        p_lo, p_hi = iv.mul(row[j], row[j], lo[j], hi[j])
        acc_lo = iv.add_down(acc_lo, p_lo)
        acc_hi = iv.add_up(acc_hi, p_hi)
    return acc_lo, acc_hi


@jit
def _affine_interval(weights, bias, lo, hi):
    """Rigorous bounds of ``W y + b`` for y in [lo, hi]."""
    n_out = weights.shape[0]
    out_lo = np.empty(n_out)
    out_hi = np.empty(n_out)
    for i in range(n_out):
        out_lo[i], out_hi[i] = _affine_row_interval(weights[i], bias[i], lo, hi)
    return out_lo, out_hi


@jit
def _affine_intervals(weights, bias, lo, hi):
    """:func:`_affine_interval` of each box (rows of ``lo`` and ``hi``)."""
    n_boxes = lo.shape[0]
    out_lo = np.empty((n_boxes, weights.shape[0]))
    out_hi = np.empty((n_boxes, weights.shape[0]))
    for b in range(n_boxes):
        out_lo[b], out_hi[b] = _affine_interval(weights, bias, lo[b], hi[b])
    return out_lo, out_hi


@row_jit
def _elementwise_one(code, c, lo, hi):
    """Rigorous bounds of ``y op c`` for y in [lo, hi] (one value)."""
    if code == _ADD:
        return iv.add(lo, hi, c, c)
    if code == _SUB:
        return iv.sub(lo, hi, c, c)
    if code == _RSUB:
        return iv.sub(c, c, lo, hi)
    if code == _MUL:
        return iv.mul(lo, hi, c, c)
    return iv.div(lo, hi, c, c)


@jit
def _elementwise_interval(code, constant, lo, hi):
    """Rigorous bounds of ``y op c`` for y in [lo, hi]."""
    n = len(lo)
    out_lo = np.empty(n)
    out_hi = np.empty(n)
    for j in range(n):
        out_lo[j], out_hi[j] = _elementwise_one(code, constant[j], lo[j], hi[j])
    return out_lo, out_hi


@jit
def _softplus_at(z):
    """An enclosure of log(1 + exp(z)) = max(z, 0) + log(1 + exp(-|z|)) (no overflow)."""
    t_lo, t_hi = iv.exp(-abs(z), -abs(z))
    s_lo, s_hi = iv.add(1.0, 1.0, t_lo, t_hi)
    l_lo, l_hi = iv.log(s_lo, s_hi)
    return iv.add(max(z, 0.0), max(z, 0.0), max(l_lo, 0.0), l_hi)


@jit
def _act_range(code, a, b):
    """An enclosure of act over [a, b] (tanh, sigmoid and softplus are increasing)."""
    if code == _TANH:
        return iv.tanh(a, b)
    if code == _SIGMOID:
        return iv.sigmoid(a, b)
    return _softplus_at(a)[0], _softplus_at(b)[1]


@jit
def _act_derivative(code, z):
    """An enclosure of act'(z) at the point z."""
    if code == _TANH:
        t_lo, t_hi = iv.tanh(z, z)
        q_lo, q_hi = iv.powi(t_lo, t_hi, 2)
        d_lo, d_hi = iv.sub(1.0, 1.0, q_lo, q_hi)
        return max(d_lo, 0.0), d_hi
    s_lo, s_hi = iv.sigmoid(z, z)
    if code == _SIGMOID:
        c_lo, c_hi = iv.sub(1.0, 1.0, s_lo, s_hi)
        return iv.mul(s_lo, s_hi, max(c_lo, 0.0), c_hi)
    return s_lo, s_hi


@jit
def _leaky_at(alpha, z):
    """An enclosure of leaky_relu(z) (z if z >= 0, else alpha z)."""
    if z >= 0.0:
        return z, z
    return iv.mul(alpha, alpha, z, z)


@jit
def _act_bounds(code, alpha, lo, hi):
    """An enclosure of act over [lo, hi]."""
    if code != _LEAKY:
        return _act_range(code, lo, hi)
    a_lo, a_hi = _leaky_at(alpha, lo)
    b_lo, b_hi = _leaky_at(alpha, hi)
    low = min(a_lo, b_lo)
    if lo < 0.0 < hi:  # a negative alpha makes 0 the minimum
        low = min(low, 0.0)
    return low, max(a_hi, b_hi)


@jit
def _activation_interval(code, alpha, lo, hi):
    """Rigorous bounds of act(y) for y in [lo, hi]."""
    n = len(lo)
    out_lo = np.empty(n)
    out_hi = np.empty(n)
    for j in range(n):
        out_lo[j], out_hi[j] = _act_bounds(code, alpha, lo[j], hi[j])
    return out_lo, out_hi


# ---------------------------------------------------------------- kernels: relaxations


@jit
def _tangent_point(code, s, concave):
    """A float where act' is near s (on z >= 0 if concave, else z <= 0); NaN where none is."""
    if code == _TANH:
        z = math.atanh(math.sqrt(1.0 - s)) if 0.0 < s <= 1.0 else math.nan
        return z if concave else -z
    if code == _SIGMOID:
        if not 0.0 < s <= 0.25:
            return math.nan
        sigma = 0.5 + 0.5 * math.sqrt(1.0 - 4.0 * s)
        z = math.log(sigma / (1.0 - sigma)) if sigma < 1.0 else math.inf
        return z if concave else -z
    return math.log(s / (1.0 - s)) if 0.0 < s < 1.0 else math.nan


@jit
def _offset_at(code, s, z):
    """An enclosure of g(z) = act(z) - s z at the point z."""
    a_lo, a_hi = _act_range(code, z, z)
    return iv.sub(a_lo, a_hi, iv.mul_down(s, z), iv.mul_up(s, z))


@jit
def _offset_piece(code, s, a, b, concave):
    """Bounds of g = act - s z over [a, b], where act is concave (or convex) throughout: the
    extreme at the ends, the other below (above) the tangent of g at the point m."""
    ga_lo, ga_hi = _offset_at(code, s, a)
    gb_lo, gb_hi = _offset_at(code, s, b)
    m = _tangent_point(code, s, concave)
    if m != m:
        m = 0.5 * a + 0.5 * b
    m = min(max(m, a), b)
    gm_lo, gm_hi = _offset_at(code, s, m)
    d_lo, d_hi = _act_derivative(code, m)
    d_lo, d_hi = iv.sub(d_lo, d_hi, s, s)
    t_lo, t_hi = iv.mul(d_lo, d_hi, iv.add_down(a, -m), iv.add_up(b, -m))
    if concave:
        return min(ga_lo, gb_lo), iv.add_up(gm_hi, t_hi)
    return iv.add_down(gm_lo, t_lo), max(ga_hi, gb_hi)


@jit
def _relax(code, alpha, lo, hi, sl, bl, su, bu):
    """Lines ``sl z + bl <= act(z) <= su z + bu`` on each [lo_j, hi_j] (module doc)."""
    for j in range(len(lo)):
        _relax_unit(code, alpha, lo[j], hi[j], sl, bl, su, bu, j)


@row_jit
def _relax_unit(code, alpha, l, u, sl, bl, su, bu, j):
    """The lines of unit j on [l, u] (:func:`_relax`), with the fallback to constant lines."""
    _relax_one(code, alpha, l, u, sl, bl, su, bu, j)
    if not (sl[j] - sl[j] == 0.0 and su[j] - su[j] == 0.0 and bl[j] < math.inf and bu[j] > -math.inf):
        sl[j] = 0.0  # infinite bounds, or a line overflowed: the constant lines of act's range
        su[j] = 0.0
        bl[j], bu[j] = _act_bounds(code, alpha, l, u)


@jit
def _relax_one(code, alpha, l, u, sl, bl, su, bu, j):
    """The lines of unit j (slopes NaN where [l, u] is not finite: :func:`_relax_unit` falls back)."""
    if not (-math.inf < l and u < math.inf):
        sl[j] = math.nan
        return
    if code == _LEAKY:
        if l >= 0.0 or u <= 0.0:
            slope = 1.0 if l >= 0.0 else alpha
            sl[j] = slope
            su[j] = slope
            bl[j] = 0.0
            bu[j] = 0.0
            return
        # f(l) = alpha l, f(u) = u; the chord's slope (any float is sound)
        chord = (u - alpha * l) / (u - l)
        through_zero = 1.0 if u >= -l else alpha
        at_l_lo, at_l_hi = iv.mul(alpha, alpha, l, l)
        if alpha <= 1.0:  # convex: chord above, a line through 0 below
            sl[j] = through_zero
            bl[j] = 0.0
            su[j] = chord
            bu[j] = max(iv.add_up(at_l_hi, -iv.mul_down(chord, l)), iv.add_up(u, -iv.mul_down(chord, u)))
        else:  # concave: chord below, a line through 0 above
            su[j] = through_zero
            bu[j] = 0.0
            sl[j] = chord
            bl[j] = min(iv.add_down(at_l_lo, -iv.mul_up(chord, l)), iv.add_down(u, -iv.mul_up(chord, u)))
        return
    f_l = _act_range(code, l, l)
    f_u = _act_range(code, u, u)
    width = u - l
    if width > 0.0 and width - width == 0.0:
        slope = (0.5 * f_u[0] + 0.5 * f_u[1] - 0.5 * f_l[0] - 0.5 * f_l[1]) / width
    else:
        d_lo, d_hi = _act_derivative(code, 0.5 * l + 0.5 * u)
        slope = 0.5 * d_lo + 0.5 * d_hi
    if slope != slope or slope - slope != 0.0:
        slope = 0.0
    g_lo = math.inf
    g_hi = -math.inf
    if code != _SOFTPLUS and u > 0.0:  # the concave part [max(l, 0), u]
        p_lo, p_hi = _offset_piece(code, slope, max(l, 0.0), u, True)
        g_lo = min(g_lo, p_lo)
        g_hi = max(g_hi, p_hi)
    if code == _SOFTPLUS or l < 0.0:  # the convex part [l, min(u, 0)] (softplus: all of it)
        p_lo, p_hi = _offset_piece(code, slope, l, u if code == _SOFTPLUS else min(u, 0.0), False)
        g_lo = min(g_lo, p_lo)
        g_hi = max(g_hi, p_hi)
    if l == 0.0 and u == 0.0 and code != _SOFTPLUS:
        g_lo, g_hi = _offset_at(code, slope, 0.0)
    sl[j] = slope
    su[j] = slope
    bl[j] = g_lo
    bu[j] = g_hi


# ---------------------------------------------------------------- kernels: the backward steps


# A backward row is column r of a coefficient matrix indexed [unit, row]: the CPU passes its (rows,
# units) matrices transposed, the device its scratch (the row index last); n: the row's units.


@row_jit
def _guard_row(lam, r, n, beta):
    """A row with a coefficient that is not finite becomes 0 . v - inf (sound, if useless): its
    new beta (its coefficients are zeroed in place)."""
    finite = beta == beta
    for j in range(n):
        if lam[j, r] - lam[j, r] != 0.0:
            finite = False
    if finite:
        return beta
    for j in range(n):
        lam[j, r] = 0.0
    return -math.inf


@row_jit
def _affine_spread(magnitude, t_term):
    """The error bound's absolute part ``T sum_j magnitude[j]``, rounded up."""
    total_magnitude = 0.0
    for j in range(len(magnitude)):
        total_magnitude = iv.add_up(total_magnitude, magnitude[j])
    return iv.mul_up(t_term, total_magnitude)


@row_jit
def _affine_back_row(product, abs_product, r, n, magnitude, k_factor, spread, beta, out):
    """Row r of :func:`_affine_back` (n + 1 columns): its new beta; its coefficients into ``out``
    (which may be ``product`` itself)."""
    weighted = 0.0  # sum_j abs_product[j] magnitude[j], rounded up (all terms >= 0)
    for j in range(n + 1):
        weighted = iv.add_up(weighted, iv.mul_up(abs_product[j, r], magnitude[j]))
    error = iv.add_up(iv.mul_up(k_factor, weighted), spread)
    beta = iv.add_down(iv.add_down(beta, product[n, r]), -error)
    for j in range(n):
        out[j, r] = product[j, r]
    return _guard_row(out, r, n, beta)


@jit
def _affine_back(product, abs_product, magnitude, k_factor, t_term, beta, rows_per_box):
    """Finish an affine step: product = fl(lam [W b]), abs_product = fl(|lam| [|W| |b|]),
    magnitude = max|y| of each input (1 for the bias column), a row per box (the rows of box b are
    b rows_per_box onwards). beta gains the bias term minus the error bound; the new coefficients
    are product's first columns."""
    n_rows, n_cols = product.shape
    lam = np.empty((n_rows, n_cols - 1))
    spread = np.empty(magnitude.shape[0])
    for b in range(magnitude.shape[0]):
        spread[b] = _affine_spread(magnitude[b], t_term)
    for r in range(n_rows):
        b = r // rows_per_box
        beta[r] = _affine_back_row(
            product.T, abs_product.T, r, n_cols - 1, magnitude[b], k_factor, spread[b], beta[r], lam.T
        )
    return lam


@jit
def _scaled_coefficient(lam, s, lo, hi):
    """(fl(lam s), a lower bound of (lam s - fl(lam s)) y over y in [lo, hi]): the exact residual
    from the fma where it is safe (0 for the slopes 0 and 1 of stable ReLUs), else its enclosure."""
    mu, error = iv.two_product(lam, s)
    if error == 0.0:
        return mu, 0.0
    if error == error:
        return mu, min(iv.mul_down(error, lo), iv.mul_down(error, hi))
    r_lo = iv.add_down(iv.mul_down(lam, s), -mu)
    r_hi = iv.add_up(iv.mul_up(lam, s), -mu)
    return mu, iv.mul(r_lo, r_hi, lo, hi)[0]


@row_jit
def _activation_back_row(lam, r, n, sl, bl, su, bu, lo, hi, beta, out):
    """Row r of :func:`_activation_back`: its new beta; its coefficients into ``out`` (which may
    be ``lam`` itself)."""
    acc = beta
    for j in range(n):
        value = lam[j, r]
        if value == 0.0:
            out[j, r] = 0.0
            continue
        slope = sl[j] if value > 0.0 else su[j]
        offset = bl[j] if value > 0.0 else bu[j]
        if offset == 0.0 and (slope == 0.0 or slope == 1.0):  # a stable ReLU unit: exact, beta unchanged
            out[j, r] = value * slope
            continue
        mu, residual = _scaled_coefficient(value, slope, lo[j], hi[j])
        out[j, r] = mu
        acc = iv.add_down(acc, iv.add_down(residual, iv.mul_down(value, offset)))
    return _guard_row(out, r, n, acc)


@jit
def _activation_back(lam, sl, bl, su, bu, lo, hi, beta, rows_per_box):
    """lam . act(y) >= lam' . y + (beta gain), through the lines of each unit (lines and bounds:
    a row per box)."""
    n_rows, n = lam.shape
    out = np.empty((n_rows, n))
    for r in range(n_rows):
        b = r // rows_per_box
        beta[r] = _activation_back_row(lam.T, r, n, sl[b], bl[b], su[b], bu[b], lo[b], hi[b], beta[r], out.T)
    return out


@row_jit
def _elementwise_back_row(lam, r, n, code, constant, lo, hi, beta, out):
    """Row r of :func:`_elementwise_back`: its new beta; its coefficients into ``out`` (which may
    be ``lam`` itself)."""
    acc = beta
    for j in range(n):
        value = lam[j, r]
        c = constant[j]
        if code == _ADD or code == _SUB or code == _RSUB:
            out[j, r] = -value if code == _RSUB else value
            acc = iv.add_down(acc, iv.mul_down(value, -c if code == _SUB else c))
        elif code == _MUL:
            mu, residual = _scaled_coefficient(value, c, lo[j], hi[j])
            out[j, r] = mu
            acc = iv.add_down(acc, residual)
        else:
            mu = value / c
            r_lo = iv.add_down(iv.div_down(value, c), -mu)
            r_hi = iv.add_up(iv.div_up(value, c), -mu)
            out[j, r] = mu
            acc = iv.add_down(acc, iv.mul(r_lo, r_hi, lo[j], hi[j])[0])
    return _guard_row(out, r, n, acc)


@jit
def _elementwise_back(lam, code, constant, lo, hi, beta, rows_per_box):
    """lam . (y op c) = lam' . y + (beta gain), rounded down (bounds: a row per box)."""
    n_rows, n = lam.shape
    out = np.empty((n_rows, n))
    for r in range(n_rows):
        b = r // rows_per_box
        beta[r] = _elementwise_back_row(lam.T, r, n, code, constant, lo[b], hi[b], beta[r], out.T)
    return out


@jit
def _box_minimum(lam, lo, hi, beta, rows_per_box):
    """min over its box of lam . x + beta, per row, rounded down (boxes: rows of lo and hi)."""
    n_rows, n = lam.shape
    out = np.empty(n_rows)
    for r in range(n_rows):
        b = r // rows_per_box
        acc = beta[r]
        for j in range(n):
            acc = iv.add_down(acc, min(iv.mul_down(lam[r, j], lo[b, j]), iv.mul_down(lam[r, j], hi[b, j])))
        out[r] = acc if acc == acc else -math.inf
    return out


@jit
def _linear_minimum(c, d, lo, hi):
    """min of c . y + d over y in [lo, hi], rounded down."""
    acc = d
    for j in range(len(c)):
        acc = iv.add_down(acc, min(iv.mul_down(c[j], lo[j]), iv.mul_down(c[j], hi[j])))
    return acc if acc == acc else -math.inf


@jit
def _linear_minima(c, d, lo, hi):
    """:func:`_linear_minimum` of each row of ``c`` (constants ``d``) over each box: (boxes, rows)."""
    out = np.empty((lo.shape[0], c.shape[0]))
    for b in range(lo.shape[0]):
        for k in range(c.shape[0]):
            out[b, k] = _linear_minimum(c[k], d[k], lo[b], hi[b])
    return out


def _interval_image(op, y_lo: np.ndarray, y_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The operation's interval extension, rounded outward, over each box (rows of ``y_lo`` and
    ``y_hi``); elementwise steps and activations unit by unit, the boxes' units as one vector."""
    if isinstance(op, _Affine):
        return _affine_intervals(op.weights, op.bias, y_lo, y_hi)
    flat_lo, flat_hi = y_lo.ravel(), y_hi.ravel()
    if isinstance(op, _Elementwise):
        z_lo, z_hi = _elementwise_interval(op.code, np.tile(op.constant, y_lo.shape[0]), flat_lo, flat_hi)
    else:
        z_lo, z_hi = _activation_interval(op.code, op.alpha, flat_lo, flat_hi)
    return z_lo.reshape(y_lo.shape), z_hi.reshape(y_lo.shape)


# ---------------------------------------------------------------- the network as operations


@dataclass(frozen=True, eq=False)
class _Affine:
    weights: np.ndarray  # (out, in)
    bias: np.ndarray  # (out,), zeros where the layer has none
    augmented: np.ndarray  # [W b], (out, in + 1)
    augmented_abs: np.ndarray
    k_factor: float
    t_term: float


@dataclass(frozen=True, eq=False)
class _Elementwise:
    code: int
    constant: np.ndarray


@dataclass(frozen=True, eq=False)
class _Activation:
    code: int
    alpha: float


def _affine(layer: Layer) -> _Affine:
    weights = np.ascontiguousarray(layer.weights, dtype=np.float64)
    bias = np.zeros(weights.shape[0]) if layer.bias is None else np.ascontiguousarray(layer.bias, dtype=np.float64)
    augmented = np.ascontiguousarray(np.column_stack([weights, bias]))
    k_factor, t_term = _matmul_error_constants(augmented.shape[0])  # lam @ [W b] sums over the outputs
    return _Affine(weights, bias, augmented, np.abs(augmented), k_factor, t_term)


def _operations(network: Network) -> list:
    """The network's steps as affine, elementwise and activation operations (linear ones dropped)."""
    ops: list = []
    for step in network.steps:
        if isinstance(step, Layer):
            ops.append(_affine(step))
        elif isinstance(step, Elementwise):
            ops.append(_Elementwise(_ELEMENTWISE_CODES[step.op], np.ascontiguousarray(step.constant, np.float64)))
        if isinstance(step, (Layer, Activation)) and step.activation != "linear":
            alpha = 0.0 if step.activation == "relu" else float(step.alpha)
            ops.append(_Activation(_ACTIVATION_CODES[step.activation], alpha))
    return ops


def _scaling_steps(ops: list) -> int:
    """How many elementwise steps come before any other (an input scaling). Each maps a box onto a
    box, so a backward pass stops after them and minimises over the bounds of their last node: the
    same bound up to rounding, without their work on every row."""
    return next((k for k, op in enumerate(ops) if not isinstance(op, _Elementwise)), len(ops))


class NetworkBounds:
    """Backward linear bounds of one network (its operations prepared once, for many boxes).

    ``lower_bound(lo, hi, c, d)`` bounds ``c . N(x) + d`` below over ``lo <= x <= hi``;
    ``box_lower_bounds`` bounds rows of them over many boxes in passes (each box's bounds are
    those it gets alone, the same steps row by row, up to the rounding of BLAS's products, whose
    order may depend on a pass's size), shared among ``threads`` threads (the kernels release the
    GIL); ``output_bounds(lo, hi)`` bounds every output on both sides.
    """

    def __init__(self, network: Network, threads: int = 1):
        if threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        self.network = network
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None  # made at the first batch shared among threads
        self.ops = _operations(network)
        self.scaling_steps = _scaling_steps(self.ops)
        self.width = max([network.n_inputs] + [len(op.bias) for op in self.ops if isinstance(op, _Affine)])

    def _boxes(self, lo, hi) -> tuple[np.ndarray, np.ndarray]:
        """Boxes as rows of ``lo`` and ``hi`` (one box: two vectors), checked; (boxes, inputs)."""
        lo = np.ascontiguousarray(np.atleast_2d(lo), dtype=np.float64)
        hi = np.ascontiguousarray(np.atleast_2d(hi), dtype=np.float64)
        if lo.ndim != 2 or lo.shape[1] != self.network.n_inputs or hi.shape != lo.shape:
            raise ValueError(f"a box is {self.network.n_inputs} lower and {self.network.n_inputs} upper values")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo <= hi)):
            raise ValueError("every box must be finite with lo <= hi")
        return lo, hi

    def _one_box(self, lo, hi) -> tuple[np.ndarray, np.ndarray]:
        """One box (two vectors), checked, as a batch of one (:meth:`_boxes`)."""
        if np.ndim(lo) != 1 or np.ndim(hi) != 1:
            raise ValueError(f"a box is {self.network.n_inputs} lower and {self.network.n_inputs} upper values")
        return self._boxes(lo, hi)

    def _backward(
        self,
        lam: np.ndarray,
        beta: np.ndarray,
        node: int,
        bounds: list,
        relaxations: dict,
        signed_identity: bool,
        rows_per_box: int,
    ) -> np.ndarray:
        """Per row, a lower bound of ``lam . v_node + beta`` over its box (``bounds``: each node's,
        a row per box; box b's rows are b rows_per_box onwards; ``beta`` is updated in place).
        ``signed_identity``: each box's rows are ``[I; -I]`` and beta 0, so a first affine step is
        exact (``[W; -W]``, ``[b; -b]``)."""
        n_boxes = bounds[0][0].shape[0]
        for k in range(node - 1, self.scaling_steps - 1, -1):
            op = self.ops[k]
            lo, hi = bounds[k]
            if isinstance(op, _Affine):
                if signed_identity and k == node - 1:
                    lam = np.tile(np.concatenate([op.weights, -op.weights]), (n_boxes, 1))
                    beta[:] = np.tile(np.concatenate([op.bias, -op.bias]), n_boxes)
                    continue
                magnitude = np.column_stack([np.maximum(np.abs(lo), np.abs(hi)), np.ones(n_boxes)])
                with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN rows: _guard_row
                    product = lam @ op.augmented
                    abs_product = np.abs(lam) @ op.augmented_abs
                lam = _affine_back(product, abs_product, magnitude, op.k_factor, op.t_term, beta, rows_per_box)
            elif isinstance(op, _Elementwise):
                lam = _elementwise_back(np.ascontiguousarray(lam), op.code, op.constant, lo, hi, beta, rows_per_box)
            else:
                sl, bl, su, bu = relaxations[k]
                lam = _activation_back(np.ascontiguousarray(lam), sl, bl, su, bu, lo, hi, beta, rows_per_box)
        first_lo, first_hi = bounds[self.scaling_steps]
        return _box_minimum(np.ascontiguousarray(lam), first_lo, first_hi, beta, rows_per_box)

    def _node_bounds(self, node: int, bounds: list, relaxations: dict) -> tuple[np.ndarray, np.ndarray]:
        """CROWN bounds of every value of node ``node`` in each box: rows +e_j and -e_j."""
        n_boxes, n = bounds[node][0].shape
        lam = np.tile(np.concatenate([np.eye(n), -np.eye(n)]), (n_boxes, 1))
        lower = self._backward(lam, np.zeros(2 * n * n_boxes), node, bounds, relaxations, True, 2 * n)
        lower = lower.reshape(n_boxes, 2 * n)
        return lower[:, :n], -lower[:, n:]

    def _propagate(self, lo: np.ndarray, hi: np.ndarray) -> tuple[list, dict]:
        """Rigorous bounds of every node in each box (rows of ``lo`` and ``hi``; interval
        arithmetic, intersected with CROWN's at the input of each activation) and each activation's
        relaxation lines, a row per box."""
        bounds = [(lo, hi)]
        relaxations: dict = {}
        for k, op in enumerate(self.ops):
            y_lo, y_hi = bounds[k]
            if isinstance(op, _Activation):
                flat_lo, flat_hi = y_lo.ravel(), y_hi.ravel()
                lines = tuple(np.empty(flat_lo.size) for _ in range(4))
                _relax(op.code, op.alpha, flat_lo, flat_hi, *lines)
                relaxations[k] = tuple(line.reshape(y_lo.shape) for line in lines)
            z_lo, z_hi = _interval_image(op, y_lo, y_hi)
            bounds.append((z_lo, z_hi))
            # (the first affine step's bounds are its interval ones already: its input is a box)
            if k + 1 < len(self.ops) and isinstance(self.ops[k + 1], _Activation) and k > self.scaling_steps:
                c_lo, c_hi = self._node_bounds(k + 1, bounds, relaxations)
                bounds[k + 1] = (np.maximum(z_lo, c_lo), np.minimum(z_hi, c_hi))
        return bounds, relaxations

    def propagate(self, lo, hi) -> tuple[list, dict]:
        """:meth:`_propagate` of the one box ``lo <= x <= hi``: each node's bounds and each
        activation's lines as vectors."""
        bounds, relaxations = self._propagate(*self._one_box(lo, hi))
        return [(z_lo[0], z_hi[0]) for z_lo, z_hi in bounds], {
            k: tuple(v[0] for v in lines) for k, lines in relaxations.items()
        }

    def lower_bound(self, lo, hi, c, d: float = 0.0) -> float:
        """A rigorous lower bound of ``c . N(x) + d`` over ``lo <= x <= hi``."""
        c = np.ascontiguousarray(c, dtype=np.float64)
        if c.shape != (self.network.n_outputs,) or not math.isfinite(d):
            raise ValueError(f"c must be {self.network.n_outputs} finite values and d finite")
        return float(self.lower_bounds(lo, hi, c[None, :], np.array([float(d)]))[0])

    def lower_bounds(self, lo, hi, c, d) -> np.ndarray:
        """Rigorous lower bounds of each row ``c[k] . N(x) + d[k]`` over the box ``lo <= x <= hi``,
        from one propagation of the box."""
        return self.box_lower_bounds(*self._one_box(lo, hi), c, d)[0]

    def box_lower_bounds(self, lo, hi, c, d) -> np.ndarray:
        """Rigorous lower bounds of each row ``c[k] . N(x) + d[k]`` over each box ``lo[b] <= x <=
        hi[b]``: (boxes, rows), from one propagation of all the boxes."""
        lo, hi = self._boxes(lo, hi)
        c = np.ascontiguousarray(c, dtype=np.float64)
        d = np.ascontiguousarray(d, dtype=np.float64)
        if c.ndim != 2 or c.shape[1] != self.network.n_outputs or d.shape != (len(c),):
            raise ValueError(f"c must be rows of {self.network.n_outputs} values and d one value a row")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(d))):
            raise ValueError("c and d must be finite")
        # a pass's matrices hold, a box, 2 n rows (a node's bounds) or len(c), of at most width + 1 columns
        step = max(1, PASS_DOUBLES // (max(2 * self.width, len(c)) * (self.width + 1)))
        threads = min(self.threads, len(lo) // BOXES_A_THREAD)
        if threads > 1:
            step = min(step, -(-len(lo) // threads))
        starts = range(0, len(lo), step)

        def one_pass(k: int) -> np.ndarray:
            return self._pass(lo[k : k + step], hi[k : k + step], c, d)

        if threads > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="network-bounds")
            with one_blas_thread():  # its spinning threads would take the cores of these
                return np.concatenate(list(self._pool.map(one_pass, starts)))
        return np.concatenate([one_pass(k) for k in starts])

    def _pass(self, lo: np.ndarray, hi: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
        """:meth:`box_lower_bounds` of boxes few enough for one pass (``PASS_DOUBLES``)."""
        bounds, relaxations = self._propagate(lo, hi)
        n_boxes, rows = lo.shape[0], len(c)
        lam, beta = np.tile(c, (n_boxes, 1)), np.tile(d, n_boxes)
        crown = self._backward(lam, beta, len(self.ops), bounds, relaxations, False, rows).reshape(n_boxes, rows)
        return np.maximum(crown, _linear_minima(c, d, *bounds[-1]))

    def objective_point_values(self, objective: NetworkObjective, points: np.ndarray) -> np.ndarray:
        """Rigorous upper ends of ``objective`` (of this network) at each point (rows of all the
        problem's variables), NaN where an enclosure is not finite: interval arithmetic through the
        operations at the point (an enclosure a few ulps wide: no relaxation is needed), then each
        row's form rounded up, combined as the objective combines its rows."""
        x = np.ascontiguousarray(np.atleast_2d(points)[:, list(objective.inputs)], dtype=np.float64)
        lo, hi = x, x
        for op in self.ops:
            lo, hi = _interval_image(op, lo, hi)
        with np.errstate(invalid="ignore"):
            uppers = -_linear_minima(-objective.c, -objective.d, lo, hi)
            values = (np.max if objective.combine == "max" else np.min)(uppers, axis=1)
        return np.where(np.isfinite(values), values, np.nan)

    def objective_bound(self, objective: NetworkObjective, lo, hi) -> float:
        """A rigorous lower bound of ``objective`` (of this network) over the box ``lo <= x <= hi``
        of all the problem's variables."""
        return float(self.objective_bounds(objective, np.atleast_2d(lo), np.atleast_2d(hi))[0])

    def objective_bounds(self, objective: NetworkObjective, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """:meth:`objective_bound` of each box (rows of ``lo`` and ``hi``), in one pass."""
        inputs = list(objective.inputs)
        return objective.combined(self.box_lower_bounds(lo[:, inputs], hi[:, inputs], objective.c, objective.d))

    def output_bounds(self, lo, hi) -> tuple[np.ndarray, np.ndarray]:
        """Rigorous lower and upper bounds of every output over the box."""
        bounds, relaxations = self._propagate(*self._one_box(lo, hi))
        n = self.network.n_outputs
        lam = np.concatenate([np.eye(n), -np.eye(n)])
        lower = self._backward(lam, np.zeros(2 * n), len(self.ops), bounds, relaxations, True, 2 * n)
        out_lo, out_hi = bounds[-1]
        return np.maximum(lower[:n], out_lo[0]), np.minimum(-lower[n:], out_hi[0])


def lower_bound(network: Network, lo, hi, c, d: float = 0.0) -> float:
    """A rigorous lower bound of ``c . N(x) + d`` over the box ``lo <= x <= hi`` (module doc)."""
    return NetworkBounds(network).lower_bound(lo, hi, c, d)


def output_bounds(network: Network, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """Rigorous lower and upper bounds of each output of ``network`` over the box."""
    return NetworkBounds(network).output_bounds(lo, hi)
