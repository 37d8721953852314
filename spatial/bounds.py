"""Certified enclosures of a tape's f, g, h: at a point, and on the uniform subdomains of boxes.

The tape is run by an interpreter that executes each instruction for a chunk of ``LANES``
subdomains at once (one dispatch per instruction and chunk), with values and, for the mean
value form, interval tangents (forward-mode AD) in per-thread scratch arrays.

Subdomain lower bounding (SLB): each box is split into ``n_per_dim ** d`` uniform subdomains;
f, g and h are bounded on each by the natural interval extension (NIE), the mean value form
(MVF: f([c]) + sum_i G_i (X_i - c_i), G the interval gradient over the subdomain, c its
midpoint), or the intersection of both. Where MVF does not apply (a kink: abs, relu, min or max
with the switch inside; a jump: atan2's cut or origin in the subdomain; an unbounded or undefined
derivative; f undefined at c) the subdomain uses NIE and counts as a fallback. A subdomain is
dropped when an output is EMPTY there (undefined everywhere: no feasible point), an inequality's
lower end is > 0, or an equality's enclosure misses [-feas_tol, feas_tol].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

import numba
import numpy as np

from . import interval as iv
from .opcodes import (
    _ABS,
    _ADD,
    _ATAN2,
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

LANES = 64  # subdomains per interpreter chunk (8, 16, 32, 64, 128 measured on the peaks ANN: 32 and 64 tie)
MAX_SUBDOMAINS = 2**40

jit = numba.njit(cache=True, nogil=True)


_NIE = 1
_MVF = 2


class Mode(IntEnum):
    """How a subdomain is bounded."""

    NIE = 1
    MVF = 2
    BOTH = 3  # the intersection of NIE and MVF


@dataclass(frozen=True)
class PointValue:
    """Enclosures of f, g and h at one point (EMPTY = NaN ends where the point is outside a domain)."""

    f_lo: float
    f_hi: float
    g_lo: np.ndarray
    g_hi: np.ndarray
    h_lo: np.ndarray
    h_hi: np.ndarray


@dataclass(frozen=True)
class BoxBounds:
    """Per box: ``lb`` (+inf: proved infeasible), ``best_point`` (midpoint of the kept subdomain
    with the lowest lower bound; NaN when none is kept), ``n_kept`` and ``n_fallback``
    (subdomains where MVF did not apply; 0 in NIE mode), and ``hull_lo``/``hull_hi``: the hull of
    the kept subdomains whose lower bound is below the box's threshold (NaN when none is)."""

    lb: np.ndarray
    best_point: np.ndarray
    n_kept: np.ndarray
    n_fallback: np.ndarray
    hull_lo: np.ndarray
    hull_hi: np.ndarray


# ---------------------------------------------------------------- the interpreter


@jit
def _varying_slots(op: np.ndarray, arg0: np.ndarray, arg1: np.ndarray) -> np.ndarray:
    """Whether each slot depends on a variable (the others have zero tangents)."""
    varying = np.zeros(len(op), dtype=np.bool_)
    for k in range(len(op)):
        code = op[k]
        if code == _VAR:
            varying[k] = True
        elif code == _CONST:
            varying[k] = False
        elif (
            code == _ADD
            or code == _SUB
            or code == _MUL
            or code == _DIV
            or code == _ATAN2
            or code == _MIN
            or code == _MAX
        ):
            varying[k] = varying[arg0[k]] or varying[arg1[k]]
        else:
            varying[k] = varying[arg0[k]]
    return varying


@jit
def _unary_derivative(code: int, alo: float, ahi: float, vlo: float, vhi: float, k: int) -> tuple[float, float, bool]:
    """An enclosure of the derivative over a (v = the value there), and whether a kink is inside."""
    if code == _TANH:
        slo, shi = iv.powi(vlo, vhi, 2)
        lo, hi = iv.sub(1.0, 1.0, slo, shi)
        return max(lo, 0.0), hi, False
    if code == _POWI:
        plo, phi = iv.powi(alo, ahi, k - 1)
        lo, hi = iv.mul(float(k), float(k), plo, phi)
        return lo, hi, False
    if code == _SQRT:
        lo, hi = iv.div(0.5, 0.5, vlo, vhi)
        return lo, hi, False
    if code == _EXP:
        return vlo, vhi, False
    if code == _LOG:
        lo, hi = iv.div(1.0, 1.0, alo, ahi)
        return lo, hi, False
    if code == _SIN:
        lo, hi = iv.cos(alo, ahi)
        return lo, hi, False
    if code == _COS:
        lo, hi = iv.sin(alo, ahi)
        return -hi, -lo, False
    if code == _TAN:
        slo, shi = iv.powi(vlo, vhi, 2)
        lo, hi = iv.add(1.0, 1.0, slo, shi)
        return lo, hi, False
    if code == _ABS:
        if alo >= 0.0:
            return 1.0, 1.0, False
        if ahi <= 0.0:
            return -1.0, -1.0, False
        return -1.0, 1.0, True
    if code == _SIGMOID:
        clo, chi = iv.sub(1.0, 1.0, vlo, vhi)
        lo, hi = iv.mul(vlo, vhi, clo, chi)
        return lo, hi, False
    if code == _RELU:
        if alo >= 0.0:
            return 1.0, 1.0, False
        if ahi <= 0.0:
            return 0.0, 0.0, False
        return 0.0, 1.0, True
    return -math.inf, math.inf, True  # a code this bounder does not know: any slope


@jit
def _binary_derivatives(
    code: int, alo: float, ahi: float, blo: float, bhi: float, vlo: float, vhi: float
) -> tuple[float, float, float, float, bool]:
    """Enclosures of d/da and d/db over the operands (v = the value), and whether a kink or a jump
    may lie inside (then the mean value form does not apply)."""
    if code == _MUL:
        return blo, bhi, alo, ahi, False
    if code == _DIV:
        rlo, rhi = iv.div(1.0, 1.0, blo, bhi)
        qlo, qhi = iv.mul(vlo, vhi, rlo, rhi)
        return rlo, rhi, -qhi, -qlo, False
    if code == _ATAN2:  # atan2(a = y, b = x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
        ylo, yhi = iv.powi(alo, ahi, 2)
        xlo, xhi = iv.powi(blo, bhi, 2)
        nlo, nhi = iv.add(xlo, xhi, ylo, yhi)
        dalo, dahi = iv.div(blo, bhi, nlo, nhi)
        dblo, dbhi = iv.div(alo, ahi, nlo, nhi)
        # atan2 jumps from near -pi below its cut {y = 0, x < 0} to pi on it, and is undefined at
        # the origin: the derivative does not bound the change across either
        jump = blo < 0.0 and alo < 0.0 <= ahi
        origin = blo <= 0.0 <= bhi and alo <= 0.0 <= ahi
        return dalo, dahi, -dbhi, -dblo, jump or origin
    a_smaller = ahi <= blo
    b_smaller = bhi <= alo
    if code == _MIN:
        if a_smaller:
            return 1.0, 1.0, 0.0, 0.0, False
        if b_smaller:
            return 0.0, 0.0, 1.0, 1.0, False
    else:
        if a_smaller:
            return 0.0, 0.0, 1.0, 1.0, False
        if b_smaller:
            return 1.0, 1.0, 0.0, 0.0, False
    return 0.0, 1.0, 0.0, 1.0, True


@jit
def _values(code, a, b, k, n_lanes, vlo, vhi):
    """Slot k's values on every lane (one branch per instruction, then a loop over the lanes)."""
    if code == _MUL:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.mul(vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane])
    elif code == _ADD:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.add(vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane])
    elif code == _TANH:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.tanh(vlo[a, lane], vhi[a, lane])
    elif code == _SUB:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.sub(vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane])
    elif code == _DIV:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.div(vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane])
    elif code == _NEG:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.neg(vlo[a, lane], vhi[a, lane])
    elif code == _POWI:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.powi(vlo[a, lane], vhi[a, lane], b)
    elif code == _SQRT:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.sqrt(vlo[a, lane], vhi[a, lane])
    elif code == _EXP:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.exp(vlo[a, lane], vhi[a, lane])
    elif code == _LOG:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.log(vlo[a, lane], vhi[a, lane])
    elif code == _SIN:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.sin(vlo[a, lane], vhi[a, lane])
    elif code == _COS:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.cos(vlo[a, lane], vhi[a, lane])
    elif code == _TAN:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.tan(vlo[a, lane], vhi[a, lane])
    elif code == _ABS:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.abs_(vlo[a, lane], vhi[a, lane])
    elif code == _ATAN2:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.atan2(vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane])
    elif code == _MIN:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.min_(vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane])
    elif code == _MAX:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.max_(vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane])
    elif code == _SIGMOID:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.sigmoid(vlo[a, lane], vhi[a, lane])
    elif code == _RELU:
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = iv.relu(vlo[a, lane], vhi[a, lane])
    else:  # a code this bounder does not know: the whole line, never another operation's range
        for lane in range(n_lanes):
            vlo[k, lane], vhi[k, lane] = -math.inf, math.inf


@jit
def _linear_tangents(code, a, b, k, n_vars, n_lanes, varying, tlo, thi):
    """Tangents of ADD, SUB and NEG: sums of the operands' tangents, no products."""
    sign = -1.0 if code == _SUB else 1.0
    for j in range(n_vars):
        for lane in range(n_lanes):
            if code == _NEG:
                lo, hi = -thi[a, j, lane], -tlo[a, j, lane]
            elif not varying[b]:
                lo, hi = tlo[a, j, lane], thi[a, j, lane]
            elif not varying[a]:
                lo, hi = (tlo[b, j, lane], thi[b, j, lane]) if sign > 0.0 else (-thi[b, j, lane], -tlo[b, j, lane])
            elif sign > 0.0:
                lo, hi = iv.add(tlo[a, j, lane], thi[a, j, lane], tlo[b, j, lane], thi[b, j, lane])
            else:
                lo, hi = iv.sub(tlo[a, j, lane], thi[a, j, lane], tlo[b, j, lane], thi[b, j, lane])
            tlo[k, j, lane] = lo
            thi[k, j, lane] = hi


@jit
def _run_tape(
    op, arg0, arg1, const_lo, const_hi, varying, x_lo, x_hi, n_lanes, vlo, vhi, with_tangents, tlo, thi, kink
):
    """Evaluate the tape on ``n_lanes`` boxes ``x_lo[:, lane], x_hi[:, lane]`` into ``vlo, vhi``
    (slot, lane); with tangents also into ``tlo, thi`` (slot, variable, lane) for varying slots,
    setting ``kink[lane]`` where a non-differentiable point of a varying slot may lie inside."""
    n_vars = x_lo.shape[0]
    if with_tangents:
        kink[:n_lanes] = False
    for k in range(len(op)):
        code = op[k]
        a = arg0[k]
        b = arg1[k]
        if code == _VAR:
            for lane in range(n_lanes):
                vlo[k, lane] = x_lo[a, lane]
                vhi[k, lane] = x_hi[a, lane]
            if with_tangents:
                for j in range(n_vars):
                    unit = 1.0 if j == a else 0.0
                    for lane in range(n_lanes):
                        tlo[k, j, lane] = unit
                        thi[k, j, lane] = unit
            continue
        if code == _CONST:
            for lane in range(n_lanes):
                vlo[k, lane] = const_lo[a]
                vhi[k, lane] = const_hi[a]
            continue
        _values(code, a, b, k, n_lanes, vlo, vhi)
        if not (with_tangents and varying[k]):
            continue
        if code == _ADD or code == _SUB or code == _NEG:
            _linear_tangents(code, a, b, k, n_vars, n_lanes, varying, tlo, thi)
        elif code == _MUL or code == _DIV or code == _ATAN2 or code == _MIN or code == _MAX:
            for lane in range(n_lanes):
                dalo, dahi, dblo, dbhi, bent = _binary_derivatives(
                    code, vlo[a, lane], vhi[a, lane], vlo[b, lane], vhi[b, lane], vlo[k, lane], vhi[k, lane]
                )
                if bent:
                    kink[lane] = True
                for j in range(n_vars):
                    lo = 0.0
                    hi = 0.0
                    if varying[a]:
                        lo, hi = iv.mul(dalo, dahi, tlo[a, j, lane], thi[a, j, lane])
                    if varying[b]:
                        plo, phi = iv.mul(dblo, dbhi, tlo[b, j, lane], thi[b, j, lane])
                        lo, hi = iv.add(lo, hi, plo, phi)
                    tlo[k, j, lane] = lo
                    thi[k, j, lane] = hi
        else:
            for lane in range(n_lanes):
                dlo, dhi, bent = _unary_derivative(code, vlo[a, lane], vhi[a, lane], vlo[k, lane], vhi[k, lane], b)
                if bent:
                    kink[lane] = True
                for j in range(n_vars):
                    tlo[k, j, lane], thi[k, j, lane] = iv.mul(dlo, dhi, tlo[a, j, lane], thi[a, j, lane])


# ---------------------------------------------------------------- subdomain lower bounding


def subdomain_edges(box_lo: np.ndarray, box_hi: np.ndarray, n_per_dim: int) -> np.ndarray:
    """Edges (B, d, n_per_dim + 1) of the uniform split of each box: the box's own ends at both
    ends, non-decreasing, so the pieces [e_j, e_j+1] cover the box exactly."""
    box_lo = np.asarray(box_lo, dtype=np.float64)
    box_hi = np.asarray(box_hi, dtype=np.float64)
    fraction = np.arange(n_per_dim + 1, dtype=np.float64) / n_per_dim
    lo = box_lo[..., None]
    hi = box_hi[..., None]
    with np.errstate(over="ignore", invalid="ignore"):
        width = hi - lo
        edges = np.where(np.isfinite(width), lo + width * fraction, lo * (1.0 - fraction) + hi * fraction)
    edges = np.clip(np.maximum.accumulate(edges, axis=-1), lo, hi)
    edges[..., 0] = box_lo
    edges[..., -1] = box_hi
    return edges


@jit
def _midpoint(lo: float, hi: float) -> float:
    return min(max(0.5 * lo + 0.5 * hi, lo), hi)


@jit
def _subdomain(edges, box, s, n_per_dim, x_lo, x_hi, lane):
    """Write subdomain ``s`` of ``box`` (digit i of s in base n_per_dim: its cell along x_i)."""
    for i in range(edges.shape[1]):
        cell = s % n_per_dim
        s //= n_per_dim
        x_lo[i, lane] = edges[box, i, cell]
        x_hi[i, lane] = edges[box, i, cell + 1]


@jit
def _mean_value_form(o, lane, center_lo, center_hi, tlo, thi, slot, varying, x_lo, x_hi, center):
    """f([c]) + sum_i G_i (X_i - c_i) for output ``o`` (EMPTY where it does not apply)."""
    lo = center_lo[o, lane]
    hi = center_hi[o, lane]
    if not (-math.inf < lo and hi < math.inf):
        return iv.EMPTY
    if varying[slot]:
        for i in range(x_lo.shape[0]):
            glo = tlo[slot, i, lane]
            ghi = thi[slot, i, lane]
            if not (-math.inf < glo and ghi < math.inf):
                return iv.EMPTY
            dlo, dhi = iv.sub(x_lo[i, lane], x_hi[i, lane], center[i, lane], center[i, lane])
            plo, phi = iv.mul(glo, ghi, dlo, dhi)
            lo, hi = iv.add(lo, hi, plo, phi)
    return lo, hi


@jit
def _bound_chunk(
    op,
    arg0,
    arg1,
    const_lo,
    const_hi,
    outputs,
    n_ineq,
    varying,
    edges,
    box,
    first,
    n_lanes,
    n_per_dim,
    mode,
    feas_tol,
    threshold,
    cells,
    scratch_lo,
    scratch_hi,
    tlo,
    thi,
    kink,
    x_lo,
    x_hi,
    center,
    center_lo,
    center_hi,
    mvf_lo,
    mvf_hi,
):
    """Bound subdomains first .. first + n_lanes - 1 of ``box``: (min lb, its subdomain or -1,
    number kept, number of MVF fallbacks); ``cells[0]``/``cells[1]`` become the lowest/highest
    cell along each axis of a kept subdomain whose lb is below ``threshold``."""
    for lane in range(n_lanes):
        _subdomain(edges, box, first + lane, n_per_dim, x_lo, x_hi, lane)
        for i in range(x_lo.shape[0]):
            center[i, lane] = _midpoint(x_lo[i, lane], x_hi[i, lane])
    use_mvf = mode != _NIE
    if use_mvf:
        _run_tape(
            op,
            arg0,
            arg1,
            const_lo,
            const_hi,
            varying,
            center,
            center,
            n_lanes,
            scratch_lo,
            scratch_hi,
            False,
            tlo,
            thi,
            kink,
        )
        for o in range(len(outputs)):
            for lane in range(n_lanes):
                center_lo[o, lane] = scratch_lo[outputs[o], lane]
                center_hi[o, lane] = scratch_hi[outputs[o], lane]
    _run_tape(
        op,
        arg0,
        arg1,
        const_lo,
        const_hi,
        varying,
        x_lo,
        x_hi,
        n_lanes,
        scratch_lo,
        scratch_hi,
        use_mvf,
        tlo,
        thi,
        kink,
    )
    best = math.inf
    best_s = -1
    kept = 0
    fallbacks = 0
    for lane in range(n_lanes):
        mvf_applies = use_mvf and not kink[lane]
        if mvf_applies:
            for o in range(len(outputs)):
                mvf_lo[o], mvf_hi[o] = _mean_value_form(
                    o, lane, center_lo, center_hi, tlo, thi, outputs[o], varying, x_lo, x_hi, center
                )
                if iv.is_empty(mvf_lo[o], mvf_hi[o]):
                    mvf_applies = False
                    break
        if use_mvf and not mvf_applies:
            fallbacks += 1
        dropped = False
        f_lo = math.inf
        for o in range(len(outputs)):
            lo = scratch_lo[outputs[o], lane]
            hi = scratch_hi[outputs[o], lane]
            if mvf_applies:
                if mode == _MVF:
                    lo, hi = mvf_lo[o], mvf_hi[o]
                else:
                    lo, hi = iv.intersect(lo, hi, mvf_lo[o], mvf_hi[o])
            if iv.is_empty(lo, hi):
                dropped = True
            elif o == 0:
                f_lo = lo
            elif o <= n_ineq:
                dropped = dropped or lo > 0.0
            else:
                dropped = dropped or lo > feas_tol or hi < -feas_tol
        if not dropped:
            kept += 1
            if f_lo < best:
                best = f_lo
                best_s = first + lane
            if f_lo < threshold:
                s = first + lane
                for i in range(cells.shape[1]):
                    cell = s % n_per_dim
                    s //= n_per_dim
                    cells[0, i] = min(cells[0, i], cell)
                    cells[1, i] = max(cells[1, i], cell)
    return best, best_s, kept, fallbacks


@jit
def _bound_work_items(
    thread,
    n_threads,
    op,
    arg0,
    arg1,
    const_lo,
    const_hi,
    outputs,
    n_ineq,
    edges,
    n_per_dim,
    n_subdomains,
    mode,
    feas_tol,
    threshold,
    chunk_best,
    chunk_subdomain,
    chunk_kept,
    chunk_fallbacks,
    chunk_cells,
):
    """Bound work items thread, thread + n_threads, ... (item = a box and a chunk of LANES of its
    first ``n_subdomains`` subdomains) with this thread's own scratch."""
    n_boxes, n_chunks = chunk_best.shape
    n_vars = edges.shape[1]
    size = len(op)
    varying = _varying_slots(op, arg0, arg1)
    scratch_lo = np.empty((size, LANES))
    scratch_hi = np.empty((size, LANES))
    tangent_size = size if mode != _NIE else 1
    tlo = np.empty((tangent_size, n_vars, LANES))
    thi = np.empty((tangent_size, n_vars, LANES))
    kink = np.zeros(LANES, dtype=np.bool_)
    x_lo = np.empty((n_vars, LANES))
    x_hi = np.empty((n_vars, LANES))
    center = np.empty((n_vars, LANES))
    center_lo = np.empty((len(outputs), LANES))
    center_hi = np.empty((len(outputs), LANES))
    mvf_lo = np.empty(len(outputs))
    mvf_hi = np.empty(len(outputs))
    for item in range(thread, n_boxes * n_chunks, n_threads):
        box = item // n_chunks
        chunk = item % n_chunks
        first = chunk * LANES
        n_lanes = min(LANES, n_subdomains - first)
        cells = chunk_cells[box, chunk]
        cells[0, :] = n_per_dim
        cells[1, :] = -1
        best, best_s, kept, fallbacks = _bound_chunk(
            op,
            arg0,
            arg1,
            const_lo,
            const_hi,
            outputs,
            n_ineq,
            varying,
            edges,
            box,
            first,
            n_lanes,
            n_per_dim,
            mode,
            feas_tol,
            threshold[box],
            cells,
            scratch_lo,
            scratch_hi,
            tlo,
            thi,
            kink,
            x_lo,
            x_hi,
            center,
            center_lo,
            center_hi,
            mvf_lo,
            mvf_hi,
        )
        chunk_best[box, chunk] = best
        chunk_subdomain[box, chunk] = best_s
        chunk_kept[box, chunk] = kept
        chunk_fallbacks[box, chunk] = fallbacks


@numba.njit(cache=True, nogil=True, parallel=True)
def _bound_work_items_parallel(
    n_threads,
    op,
    arg0,
    arg1,
    const_lo,
    const_hi,
    outputs,
    n_ineq,
    edges,
    n_per_dim,
    n_subdomains,
    mode,
    feas_tol,
    threshold,
    chunk_best,
    chunk_subdomain,
    chunk_kept,
    chunk_fallbacks,
    chunk_cells,
):
    """The work items spread over ``n_threads`` numba threads (one strided share each)."""
    for thread in numba.prange(n_threads):
        _bound_work_items(
            thread,
            n_threads,
            op,
            arg0,
            arg1,
            const_lo,
            const_hi,
            outputs,
            n_ineq,
            edges,
            n_per_dim,
            n_subdomains,
            mode,
            feas_tol,
            threshold,
            chunk_best,
            chunk_subdomain,
            chunk_kept,
            chunk_fallbacks,
            chunk_cells,
        )


@jit
def _reduce_chunks(
    edges,
    n_per_dim,
    chunk_best,
    chunk_subdomain,
    chunk_kept,
    chunk_fallbacks,
    chunk_cells,
    lb,
    best_point,
    n_kept,
    n_fallback,
    hull_lo,
    hull_hi,
):
    """Per box: the lowest chunk bound (the first on ties), its subdomain's midpoint, the counts,
    and the hull of the subdomains below the threshold (NaN where there is none)."""
    x_lo = np.empty((edges.shape[1], 1))
    x_hi = np.empty((edges.shape[1], 1))
    for box in range(chunk_best.shape[0]):
        best = math.inf
        best_s = -1
        for chunk in range(chunk_best.shape[1]):
            n_kept[box] += chunk_kept[box, chunk]
            n_fallback[box] += chunk_fallbacks[box, chunk]
            if chunk_best[box, chunk] < best:
                best = chunk_best[box, chunk]
                best_s = chunk_subdomain[box, chunk]
        lb[box] = best
        for i in range(edges.shape[1]):
            low = n_per_dim
            high = -1
            for chunk in range(chunk_best.shape[1]):
                low = min(low, chunk_cells[box, chunk, 0, i])
                high = max(high, chunk_cells[box, chunk, 1, i])
            if high >= 0:
                hull_lo[box, i] = edges[box, i, low]
                hull_hi[box, i] = edges[box, i, high + 1]
        if best_s >= 0:
            _subdomain(edges, box, best_s, n_per_dim, x_lo, x_hi, 0)
            for i in range(edges.shape[1]):
                best_point[box, i] = _midpoint(x_lo[i, 0], x_hi[i, 0])


def checked_request(
    tape: Tape,
    box_lo: np.ndarray,
    box_hi: np.ndarray,
    n_per_dim: int,
    mode: int,
    threshold: np.ndarray | None,
    sides_cut: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The boxes and thresholds of a :func:`bound_boxes` request as contiguous float64 arrays
    (threshold +inf by default), each box cut into ``n_per_dim`` along ``sides_cut`` sides (None:
    all of them); ValueError for anything malformed."""
    box_lo = np.ascontiguousarray(box_lo, dtype=np.float64)
    box_hi = np.ascontiguousarray(box_hi, dtype=np.float64)
    if box_lo.ndim != 2 or box_lo.shape != box_hi.shape or box_lo.shape[1] != tape.n_vars:
        raise ValueError(f"boxes must be two (B, {tape.n_vars}) arrays")
    if not (np.all(np.isfinite(box_lo)) and np.all(np.isfinite(box_hi)) and np.all(box_lo <= box_hi)):
        raise ValueError("boxes must be finite with lo <= hi")
    if int(mode) not in (Mode.NIE, Mode.MVF, Mode.BOTH):
        raise ValueError(f"mode must be 1 (NIE), 2 (MVF) or 3 (both), not {mode}")
    if n_per_dim < 1 or n_per_dim ** (tape.n_vars if sides_cut is None else sides_cut) > MAX_SUBDOMAINS:
        raise ValueError(f"n_per_dim = {n_per_dim} gives no or too many subdomains")
    n_boxes = box_lo.shape[0]
    if threshold is None:
        threshold = np.full(n_boxes, np.inf)
    threshold = np.ascontiguousarray(threshold, dtype=np.float64)
    if threshold.shape != (n_boxes,):
        raise ValueError(f"threshold must have one value per box ({n_boxes})")
    return box_lo, box_hi, threshold


def bound_boxes(
    tape: Tape,
    box_lo: np.ndarray,
    box_hi: np.ndarray,
    n_per_dim: int,
    mode: int = Mode.BOTH,
    feas_tol: float = 1e-6,
    parallel: bool = True,
    threshold: np.ndarray | None = None,
    sides: np.ndarray | None = None,
) -> BoxBounds:
    """Subdomain lower bounds of f on B boxes ``[box_lo[b], box_hi[b]]`` (float64 (B, d), finite),
    each split into ``n_per_dim ** d`` uniform subdomains bounded by ``mode`` (see :class:`Mode`);
    with ``sides`` (int (B, k), k <= d distinct sides per box, as :func:`.boxes.widest_sides`
    gives), into ``n_per_dim ** k``: n pieces along those sides, the others whole.
    ``threshold`` (B,) (default +inf): ``hull_lo/hull_hi`` are the hull of the kept subdomains
    whose lower bound is below it; the rest of the box holds no feasible point below it."""
    sides = None if sides is None else np.asarray(sides, dtype=np.int64)
    cut = None if sides is None or sides.ndim != 2 else sides.shape[1]
    box_lo, box_hi, threshold = checked_request(tape, box_lo, box_hi, n_per_dim, mode, threshold, cut)
    n_boxes, d = box_lo.shape
    found = BoxBounds(
        lb=np.empty(n_boxes),
        best_point=np.full((n_boxes, d), np.nan),
        n_kept=np.zeros(n_boxes, dtype=np.int64),
        n_fallback=np.zeros(n_boxes, dtype=np.int64),
        hull_lo=np.full((n_boxes, d), np.nan),
        hull_hi=np.full((n_boxes, d), np.nan),
    )
    if sides is None:
        _bound_split(tape, box_lo, box_hi, n_per_dim, np.arange(d), d, mode, feas_tol, parallel, threshold, found)
        return found
    k = cut or 0
    if sides.shape != (n_boxes, k) or not 1 <= k <= d or np.any((sides < 0) | (sides >= d)):
        raise ValueError(f"sides must be a (B, k) array of sides 0 .. {d - 1} with 1 <= k <= {d}")
    sides = np.sort(sides, axis=1)
    if np.any(sides[:, 1:] == sides[:, :-1]):
        raise ValueError("sides must name distinct sides of each box")
    keys, group = np.unique(sides, axis=0, return_inverse=True)
    for g, key in enumerate(keys):
        rows = np.flatnonzero(group.ravel() == g)
        order = split_order(key, d)
        part = BoxBounds(**{name: getattr(found, name)[rows] for name in BoxBounds.__dataclass_fields__})
        _bound_split(
            tape, box_lo[rows], box_hi[rows], n_per_dim, order, k, mode, feas_tol, parallel, threshold[rows], part
        )
        for name in BoxBounds.__dataclass_fields__:
            getattr(found, name)[rows] = getattr(part, name)
    return found


def split_order(sides: np.ndarray, d: int) -> np.ndarray:
    """The variables in the order the kernels see them when ``sides`` are cut: those sides, then the others."""
    return np.concatenate([sides, np.setdiff1d(np.arange(d), sides)]).astype(np.int64)


def split_edges(box_lo: np.ndarray, box_hi: np.ndarray, n_per_dim: int, order: np.ndarray, k: int) -> np.ndarray:
    """Edges (B, d, n_per_dim + 1) of boxes cut into ``n_per_dim`` pieces along their sides
    ``order[:k]``, in the kernels' order of variables (``order``): those of :func:`subdomain_edges`
    for the first k, one piece [lo, hi] for the others (only their cell 0 is ever read)."""
    edges = subdomain_edges(box_lo[:, order], box_hi[:, order], n_per_dim)
    edges[:, k:, 1:] = box_hi[:, order[k:], None]
    return np.ascontiguousarray(edges)  # a[:, order] may come back in another layout: one compiled signature


def _bound_split(tape, box_lo, box_hi, n_per_dim, order, k, mode, feas_tol, parallel, threshold, found) -> None:
    """Bound boxes cut into ``n_per_dim`` pieces along sides ``order[:k]`` (the others whole) into
    ``found`` (filled as :func:`bound_boxes` returns it). The kernels cut sides 0 .. k - 1 of the
    variables in ``order``: the tape reads variable ``order[j]`` as its j-th (VAR's index
    renumbered), the edges of sides k .. d - 1 make one piece, and the results come back in the
    problem's order of variables."""
    n_boxes, d = box_lo.shape
    position = np.argsort(order)  # variable v is the kernels' position[v]
    is_var = tape.op == _VAR
    arg0 = np.where(is_var, position[np.where(is_var, tape.arg0, 0)], tape.arg0).astype(np.int32)
    edges = split_edges(box_lo, box_hi, n_per_dim, order, k)
    n_subdomains = n_per_dim**k
    n_chunks = -(-n_subdomains // LANES)
    chunk_best = np.empty((n_boxes, n_chunks))
    chunk_subdomain = np.empty((n_boxes, n_chunks), dtype=np.int64)
    chunk_kept = np.empty((n_boxes, n_chunks), dtype=np.int64)
    chunk_fallbacks = np.empty((n_boxes, n_chunks), dtype=np.int64)
    chunk_cells = np.empty((n_boxes, n_chunks, 2, d), dtype=np.int64)
    arguments = (
        tape.op,
        arg0,
        tape.arg1,
        tape.const_lo,
        tape.const_hi,
        tape.outputs,
        tape.n_ineq,
        edges,
        int(n_per_dim),
        int(n_subdomains),
        int(mode),
        float(feas_tol),
        threshold,
        chunk_best,
        chunk_subdomain,
        chunk_kept,
        chunk_fallbacks,
        chunk_cells,
    )
    if parallel:
        _bound_work_items_parallel(numba.get_num_threads(), *arguments)
    else:
        _bound_work_items(0, 1, *arguments)
    best_point, hull_lo, hull_hi = (np.full((n_boxes, d), np.nan) for _ in range(3))
    _reduce_chunks(
        edges,
        int(n_per_dim),
        chunk_best,
        chunk_subdomain,
        chunk_kept,
        chunk_fallbacks,
        chunk_cells,
        found.lb,
        best_point,
        found.n_kept,
        found.n_fallback,
        hull_lo,
        hull_hi,
    )
    found.best_point[:, order] = best_point
    found.hull_lo[:, order] = hull_lo
    found.hull_hi[:, order] = hull_hi


# ---------------------------------------------------------------- points


# At a point every slot also carries a ball: its value lies in whole + [low_lo, low_hi] (a double
# plus a small interval, ``whole`` NaN where none is kept). Sums, differences, products, squares,
# negations and signed abs act on balls with error-free transformations (TwoSum, the fma residual
# of a product), so a product's rounding error survives into the difference that cancels it:
# a * b - c is enclosed to the ulp of the residual, not of a * b. Other operations start a ball
# from their interval. The slot's interval is its plain enclosure intersected with its ball's.


@jit
def _interval_ball(lo: float, hi: float) -> tuple[float, float, float]:
    """The ball lo + [0, hi - lo] (NaN where an end is not finite)."""
    if -math.inf < lo and hi < math.inf:
        return lo, 0.0, iv.add_up(hi, -lo)
    return math.nan, math.nan, math.nan


@jit
def _normalized_ball(whole: float, lo: float, hi: float) -> tuple[float, float, float]:
    """The ball moved so that ``whole`` is the nearest double to whole + lo (NaN where not finite)."""
    if not (-math.inf < whole < math.inf and -math.inf < lo and hi < math.inf):
        return math.nan, math.nan, math.nan
    moved, rest = iv.two_sum(whole, lo)  # whole + lo = moved + rest exactly
    if moved == whole or rest != rest:
        return whole, lo, hi
    return moved, rest, iv.add_up(rest, iv.add_up(hi, -lo))


@jit
def _ball_op(code, wa, alo, ahi, wb, blo, bhi):
    """The ball of an operation on balls a and b: NEG, ADD, SUB, MUL (a square is a * a) and ABS
    when the sign is known; NaN for the rest (or where a step is not exact)."""
    if code == _NEG:
        return -wa, -ahi, -alo
    if code == _ABS:
        if iv.add_down(wa, alo) >= 0.0:
            return wa, alo, ahi
        if iv.add_up(wa, ahi) <= 0.0:
            return -wa, -ahi, -alo
        return math.nan, math.nan, math.nan
    if code == _SUB:
        wb, blo, bhi = -wb, -bhi, -blo
    if code == _ADD or code == _SUB:
        whole, error = iv.two_sum(wa, wb)
        lo, hi = iv.add(alo, ahi, blo, bhi)
        lo, hi = iv.add(lo, hi, error, error)
        return whole, lo, hi
    if code == _MUL:  # (wa + la)(wb + lb) = wa wb + wa lb + la wb + la lb
        whole, error = iv.two_product(wa, wb)
        if alo == ahi and blo == bhi:  # exact balls (the common case): scalar directed products
            lo = iv.add_down(iv.add_down(iv.mul_down(wa, blo), iv.mul_down(alo, wb)), iv.mul_down(alo, blo))
            hi = iv.add_up(iv.add_up(iv.mul_up(wa, blo), iv.mul_up(alo, wb)), iv.mul_up(alo, blo))
            return whole, iv.add_down(lo, error), iv.add_up(hi, error)
        lo, hi = iv.mul(wa, wa, blo, bhi)
        plo, phi = iv.mul(alo, ahi, wb, wb)
        lo, hi = iv.add(lo, hi, plo, phi)
        plo, phi = iv.mul(alo, ahi, blo, bhi)
        lo, hi = iv.add(lo, hi, plo, phi)
        lo, hi = iv.add(lo, hi, error, error)
        return whole, lo, hi
    return math.nan, math.nan, math.nan


@jit
def _narrowed(slot, n_lanes, vlo, vhi, plain_lo, plain_hi) -> bool:
    """Whether the slot's value is narrower than its plain enclosure on some lane."""
    for lane in range(n_lanes):
        if vlo[slot, lane] != plain_lo[slot, lane] or vhi[slot, lane] != plain_hi[slot, lane]:
            return True
    return False


@jit
def _run_point_tape(
    op, arg0, arg1, const_lo, const_hi, x, n_lanes, plain_lo, plain_hi, vlo, vhi, whole, low_lo, low_hi
):
    """Evaluate the tape at the points ``x[:, lane]`` into ``vlo, vhi`` (slot, lane): each slot's
    interval value on its operands' values, intersected with its plain enclosure ``plain_lo,
    plain_hi`` (:func:`_run_tape` at the points: so never wider) and with its ball, kept in
    ``whole, low_lo, low_hi``."""
    for k in range(len(op)):
        code = op[k]
        a = arg0[k]
        b = arg1[k]
        if code == _VAR or code == _CONST:
            for lane in range(n_lanes):
                vlo[k, lane] = plain_lo[k, lane]
                vhi[k, lane] = plain_hi[k, lane]
                whole[k, lane], low_lo[k, lane], low_hi[k, lane] = _interval_ball(vlo[k, lane], vhi[k, lane])
            continue
        binary = code == _ADD or code == _SUB or code == _MUL or code == _DIV or code == _ATAN2
        binary = binary or code == _MIN or code == _MAX
        if _narrowed(a, n_lanes, vlo, vhi, plain_lo, plain_hi) or (
            binary and _narrowed(b, n_lanes, vlo, vhi, plain_lo, plain_hi)
        ):
            _values(code, a, b, k, n_lanes, vlo, vhi)
        else:  # the operands' plain enclosures: so is the value
            for lane in range(n_lanes):
                vlo[k, lane] = plain_lo[k, lane]
                vhi[k, lane] = plain_hi[k, lane]
        binary = code == _ADD or code == _SUB or code == _MUL
        tracked = binary or code == _NEG or code == _ABS
        if code == _POWI and b == 2:
            code = _MUL
            b = a
            binary = tracked = True
        c = b if binary else a  # a unary operation's second ball is unused
        for lane in range(n_lanes):
            lo, hi = iv.intersect(vlo[k, lane], vhi[k, lane], plain_lo[k, lane], plain_hi[k, lane])
            w = blo = bhi = math.nan
            if tracked and whole[a, lane] == whole[a, lane] and whole[c, lane] == whole[c, lane]:
                w, blo, bhi = _ball_op(
                    code,
                    whole[a, lane],
                    low_lo[a, lane],
                    low_hi[a, lane],
                    whole[c, lane],
                    low_lo[c, lane],
                    low_hi[c, lane],
                )
                w, blo, bhi = _normalized_ball(w, blo, bhi)
            if w == w and not iv.is_empty(lo, hi):
                lo, hi = iv.intersect(lo, hi, iv.add_down(w, blo), iv.add_up(w, bhi))
            else:
                w, blo, bhi = _interval_ball(lo, hi)
            vlo[k, lane] = lo
            vhi[k, lane] = hi
            whole[k, lane] = w
            low_lo[k, lane] = blo
            low_hi[k, lane] = bhi


@jit
def _point_outputs(op, arg0, arg1, const_lo, const_hi, outputs, x):
    """Enclosures of the outputs (output, point) at the points ``x[:, k]`` (:func:`_run_point_tape`)."""
    size, k = len(op), x.shape[1]
    plain_lo = np.empty((size, k))
    plain_hi = np.empty((size, k))
    unused = np.empty((1, 1, 1))
    varying = np.zeros(size, dtype=np.bool_)
    kink = np.zeros(k, dtype=np.bool_)
    _run_tape(op, arg0, arg1, const_lo, const_hi, varying, x, x, k, plain_lo, plain_hi, False, unused, unused, kink)
    vlo = np.empty((size, k))
    vhi = np.empty((size, k))
    whole = np.empty((size, k))
    low_lo = np.empty((size, k))
    low_hi = np.empty((size, k))
    _run_point_tape(op, arg0, arg1, const_lo, const_hi, x, k, plain_lo, plain_hi, vlo, vhi, whole, low_lo, low_hi)
    lo = np.empty((len(outputs), k))
    hi = np.empty((len(outputs), k))
    for o in range(len(outputs)):
        lo[o] = vlo[outputs[o]]
        hi[o] = vhi[outputs[o]]
    return lo, hi


def _outputs_at(tape: Tape, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # a new writable array: a read-only one (a problem's bounds) would be another numba type to compile
    x = np.array(np.asarray(points, dtype=np.float64).reshape(-1, tape.n_vars).T, order="C")
    return _point_outputs(tape.op, tape.arg0, tape.arg1, tape.const_lo, tape.const_hi, tape.outputs, x)


def evaluate_point(tape: Tape, x: np.ndarray) -> PointValue:
    """Rigorous enclosures of f, g and h at the point ``x`` (d floats)."""
    lo, hi = (a[:, 0] for a in _outputs_at(tape, x))
    g = slice(1, 1 + tape.n_ineq)
    h = slice(1 + tape.n_ineq, None)
    return PointValue(f_lo=float(lo[0]), f_hi=float(hi[0]), g_lo=lo[g], g_hi=hi[g], h_lo=lo[h], h_hi=hi[h])


def _feasible(f_lo, g_hi, h_lo, h_hi, feas_tol: float):
    """f is defined, every g's enclosure is <= 0 and every h's enclosure lies in [-feas_tol, feas_tol]
    (one point, or points along the last axis: constraints along the first)."""
    return (
        (f_lo == f_lo)
        & np.all(g_hi <= 0.0, axis=0)
        & np.all(h_lo >= -feas_tol, axis=0)
        & np.all(h_hi <= feas_tol, axis=0)
    )


def is_feasible(value: PointValue, feas_tol: float) -> bool:
    """Whether the point is feasible: :func:`_feasible` of its enclosures."""
    return bool(_feasible(value.f_lo, value.g_hi, value.h_lo, value.h_hi, feas_tol))


def feasible_values(tape: Tape, points: np.ndarray, feas_tol: float) -> np.ndarray:
    """The upper end of f's enclosure at each of the points (k x d), NaN where a point is not
    feasible (:func:`_feasible`): one pass of the tape for them all."""
    lo, hi = _outputs_at(tape, points)
    g = slice(1, 1 + tape.n_ineq)
    h = slice(1 + tape.n_ineq, None)
    return np.where(_feasible(lo[0], hi[g], lo[h], hi[h], feas_tol), hi[0], np.nan)
