"""The kernels of one spatial B&B phase over device-resident static task lists.

A phase reads the open boxes of ``q_in`` (boxes and their lower bounds) and writes ``q_out``
through an atomic tail (the lecture seed's static task list): :func:`branch_kernel` prunes the boxes at
or above the prune level, carries the unselected ones over and bisects the selected ones into a
children list; the children are contracted and bounded (:mod:`.contract`,
:mod:`.kernels`; with Lagrangians, :func:`levels_kernel` names each child's nearest and
:func:`lagrangian_kernel` takes each L's bounds of its children); :func:`candidate_kernel` evaluates each child's best point rigorously
and lowers the device incumbent with an atomic min; :func:`keep_kernel` shrinks each child to the hull of
its subdomains below the level and appends the survivors to ``q_out``; :func:`claim` names the
child that holds the incumbent and the lowest kept child (for the host's local solves). Whole
network boxes skip the tape: :func:`whole_boxes` fills their bounds and best points (the host
offers their centres and may lower the incumbent with :func:`lower_ub` before the keep kernel).

The rules are the CPU solver's (:mod:`pbbflow.spatial.bnb`), decision for decision. Shared state
lives in two small device arrays the host reads once per phase: ``real`` (float64, the ``R_*``
entries) and ``count`` (int64, the ``C_*`` entries).
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np
from numba import cuda, float64, int64

from .interval import add_down, add_up
from .kernels import (
    MAX_VARS,
    SOURCE_STAMP,
    THREADS_PER_BLOCK,
    DeviceTape,
    add_nearest,
    grid_stride,
    mul_nearest,
    run_point_tape,
    run_tape,
)

N_REAL, N_COUNT = 5, 6  # the lengths of ``real`` and ``count``
R_UB, R_PRUNED, R_UNSPLIT, R_OPEN_MIN, R_BEST_KEPT = range(N_REAL)  # incumbent, pruned, unsplittable, ...
C_OUT, C_CHILDREN, C_SELECTED, C_UNSPLIT, C_BEST_KEPT, C_UB_CHILD = range(N_COUNT)
NONE = np.iinfo(np.int64).max  # no child named
_LOWEST = -sys.float_info.max


@cuda.jit(device=True)
def prune_level(ub, eps_abs, eps_rel):
    """UB - max(eps_abs, eps_rel |UB|), never -inf; +inf without an incumbent (the CPU's rule)."""
    if not (-math.inf < ub < math.inf):
        return math.inf
    return max(add_nearest(ub, -max(eps_abs, mul_nearest(eps_rel, abs(ub)))), _LOWEST)


@cuda.jit(device=True)
def _thread():
    return int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x


@cuda.jit(device=True)
def _fmax(a, b):
    """numpy's fmax: the larger, ignoring a NaN."""
    if a != a:
        return b
    if b != b:
        return a
    return max(a, b)


@cuda.jit(device=True)
def _fmin(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return min(a, b)


@cuda.jit(cache=True)  # its code is all in this file: the cache checks this file
def begin_phase(real, count, host_ub):
    """Clear the per-phase entries and lower the incumbent to the host's (one thread)."""
    if _thread() != 0:
        return
    cuda.atomic.min(real, R_UB, host_ub)
    real[R_OPEN_MIN] = math.inf
    real[R_BEST_KEPT] = math.inf
    count[C_OUT] = 0
    count[C_CHILDREN] = 0
    count[C_SELECTED] = 0
    count[C_BEST_KEPT] = NONE
    count[C_UB_CHILD] = NONE


@cuda.jit(cache=True)  # its code is all in this file: the cache checks this file
def lower_ub(real, host_ub):
    """Lower the incumbent to the host's mid-phase, nothing else (one thread)."""
    if _thread() == 0:
        cuda.atomic.min(real, R_UB, host_ub)


@cuda.jit(cache=True)  # its code is all in this file: the cache checks this file
def whole_boxes(n_children, child_lo, child_hi, box_lb, best_point, hull_lo, hull_hi, candidate):
    """Whole network boxes, whose tape is not run (the CPU's ``Exploration._offer_centres``): each
    child's bound -inf until the layers raise it, no hull (kept uncut), its centre as its best
    point, and no candidate (the host offers the centres)."""
    box = _thread()
    if box >= n_children:
        return
    box_lb[box] = -math.inf
    candidate[box] = math.inf
    for i in range(child_lo.shape[1]):
        lo = child_lo[box, i]
        hi = child_hi[box, i]
        best_point[box, i] = min(max(0.5 * lo + 0.5 * hi, lo), hi)
        hull_lo[box, i] = math.nan
        hull_hi[box, i] = math.nan


MAX_LEVELS = 3  # bisections per box and phase at most
MAX_PIECES = 1 << MAX_LEVELS  # children per box and phase at most (a constant: local array sizes)


@cuda.jit(device=True)
def _widest_side(lo, hi, c, scale):
    """The side of box ``c`` of ``lo, hi`` to bisect: the widest relative to ``scale`` whose middle
    lies strictly inside (the lowest index on ties, as the CPU's ``spatial.boxes.bisect``); -1 when none."""
    side = -1
    widest = 0.0
    for i in range(scale.shape[0]):
        width = (hi[c, i] - lo[c, i]) / scale[i] if scale[i] > 0 else 0.0
        middle = lo[c, i] + 0.5 * (hi[c, i] - lo[c, i])
        if width > widest and lo[c, i] < middle < hi[c, i]:
            side = i
            widest = width
    return side


@functools.cache
def branch_kernel():
    """Per open box: pruned at the level; else, when its bound is at most ``select_lb`` and one of
    the first ``n_select`` to ask, split into up to ``2 ** levels`` children (``levels`` <=
    :data:`MAX_LEVELS` rounds in which every piece is bisected across its widest side relative to
    ``scale``; the CPU's rule when ``levels`` is 1), kept open for good as unsplittable when no
    side splits in floating point; else carried over to ``q_out``."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key (kernels.SOURCE_STAMP)

    @cuda.jit(cache=True)
    def branch(
        n_in,
        in_lo,
        in_hi,
        in_lb,
        select_lb,
        n_select,
        levels,
        scale,
        eps_abs,
        eps_rel,
        real,
        count,
        out_lo,
        out_hi,
        out_lb,
        child_lo,
        child_hi,
    ):
        if stamp < 0:
            return
        box = _thread()
        if box >= n_in:
            return
        lb = in_lb[box]
        if lb >= prune_level(real[R_UB], eps_abs, eps_rel):
            cuda.atomic.min(real, R_PRUNED, lb)
            return
        n_vars = in_lo.shape[1]
        if lb <= select_lb and cuda.atomic.add(count, C_SELECTED, 1) < n_select:
            lo = cuda.local.array((MAX_PIECES, MAX_VARS), float64)
            hi = cuda.local.array((MAX_PIECES, MAX_VARS), float64)
            for i in range(n_vars):
                lo[0, i] = in_lo[box, i]
                hi[0, i] = in_hi[box, i]
            pieces = 1
            for _ in range(levels):
                for c in range(pieces):
                    side = _widest_side(lo, hi, c, scale)
                    if side < 0:
                        continue
                    for i in range(n_vars):
                        lo[pieces, i] = lo[c, i]
                        hi[pieces, i] = hi[c, i]
                    middle = lo[c, side] + 0.5 * (hi[c, side] - lo[c, side])
                    hi[c, side] = middle
                    lo[pieces, side] = middle
                    pieces += 1
            if pieces == 1:
                cuda.atomic.add(count, C_UNSPLIT, 1)
                cuda.atomic.min(real, R_UNSPLIT, lb)
                return
            first = cuda.atomic.add(count, C_CHILDREN, pieces)
            for c in range(pieces):
                for i in range(n_vars):
                    child_lo[first + c, i] = lo[c, i]
                    child_hi[first + c, i] = hi[c, i]
            return
        slot = cuda.atomic.add(count, C_OUT, 1)
        for i in range(n_vars):
            out_lo[slot, i] = in_lo[box, i]
            out_hi[slot, i] = in_hi[box, i]
        out_lb[slot] = lb
        cuda.atomic.min(real, R_OPEN_MIN, lb)

    return branch


@functools.cache
def levels_kernel():
    """Each child's bounding threshold, the prune level now, and ``skip_f`` = ``emptied``; with
    ``n_points`` Lagrangians (their points' rows of ``points``), the one whose point is nearest the
    child's centre (:func:`pbbflow.spatial.lagrangian.nearest`: Euclidean relative to ``scale``, the
    first on ties): ``skip_l[k, box]`` is set for every other one (and for all when emptied), and
    ``threshold_l`` is the level plus its slack, rounded up."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key (kernels.SOURCE_STAMP)

    @cuda.jit(cache=True)
    def fill_levels(
        n_children,
        real,
        eps_abs,
        eps_rel,
        emptied,
        child_lo,
        child_hi,
        points,
        n_points,
        scale,
        slacks,
        threshold,
        threshold_l,
        skip_l,
        skip_f,
    ):
        if stamp < 0:
            return
        box = _thread()
        if box >= n_children:
            return
        level = prune_level(real[R_UB], eps_abs, eps_rel)
        threshold[box] = level
        skip_f[box] = emptied[box]
        if n_points == 0:
            return
        chosen = 0
        closest = math.inf
        for k in range(n_points):
            total = 0.0
            for i in range(child_lo.shape[1]):
                gap = (0.5 * (child_lo[box, i] + child_hi[box, i]) - points[k, i]) / scale[i]
                total += gap * gap
            distance = math.sqrt(total)
            if distance < closest:
                chosen = k
                closest = distance
        for k in range(n_points):
            skip_l[k, box] = emptied[box] or k != chosen
        threshold_l[box] = add_up(level, slacks[chosen])

    return fill_levels


@functools.cache
def lagrangian_kernel():
    """Per child bounded on one Lagrangian (``skip`` not set), the CPU's rule: its bound ``lb_l``,
    the L-bound minus ``slack`` rounded down (+inf: proved infeasible), raised to the level when no
    subdomain is below it (its L-hull empty); its L-hull; ``skip_f`` set unless that bound leaves
    it below the level (only those boxes get f's bound, over the whole box)."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key (kernels.SOURCE_STAMP)

    @cuda.jit(cache=True)
    def take_lagrangian(
        n_children, skip, box_lb, hull_lo, hull_hi, slack, threshold, lb_l, hull_lo_l, hull_hi_l, skip_f
    ):
        if stamp < 0:
            return
        box = _thread()
        if box >= n_children or skip[box]:
            return
        lb = add_down(box_lb[box], -slack) if box_lb[box] < math.inf else math.inf
        if hull_lo[box, 0] != hull_lo[box, 0] and lb < math.inf:
            lb = max(lb, threshold[box])  # every subdomain's L-bound is at or above the level
        lb_l[box] = lb
        for i in range(hull_lo.shape[1]):
            hull_lo_l[box, i] = hull_lo[box, i]
            hull_hi_l[box, i] = hull_hi[box, i]
        skip_f[box] = not lb < threshold[box]

    return take_lagrangian


@functools.cache
def candidate_kernel():
    """The kernel evaluating each child's best point rigorously as the CPU does
    (:func:`pbbflow.spatial.bounds._point_outputs`: point intervals and balls through the tape), a
    grid-stride loop on the threads of the tape's workspace (``slots``: seven value columns):
    ``candidate[box]`` = f's upper end where the point is feasible (g <= 0, |h| <= feas_tol, f
    defined), else +inf; the incumbent ``real[R_UB]`` is lowered atomically."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key (kernels.SOURCE_STAMP)

    @cuda.jit(cache=True)
    def offer_candidates(
        op,
        arg0,
        arg1,
        const_lo,
        const_hi,
        outputs,
        n_ineq,
        varying,
        n_children,
        best_point,
        feas_tol,
        candidate,
        real,
        slots,
    ):
        j, stride = grid_stride()
        if stamp < 0:
            return
        plain_lo = slots[:, 0, j : j + 1]
        plain_hi = slots[:, 1, j : j + 1]
        vlo = slots[:, 2, j : j + 1]
        vhi = slots[:, 3, j : j + 1]
        whole = slots[:, 4, j : j + 1]
        low_lo = slots[:, 5, j : j + 1]
        low_hi = slots[:, 6, j : j + 1]
        x = cuda.local.array((MAX_VARS, 1), float64)
        unused = cuda.local.array((1, 1, 1), float64)
        kink = cuda.local.array(1, np.bool_)
        n_vars = best_point.shape[1]
        for box in range(j, n_children, stride):
            candidate[box] = _point_value(
                op,
                arg0,
                arg1,
                const_lo,
                const_hi,
                outputs,
                n_ineq,
                varying,
                best_point[box],
                feas_tol,
                x[:n_vars],
                plain_lo,
                plain_hi,
                unused,
                kink,
                vlo,
                vhi,
                whole,
                low_lo,
                low_hi,
            )
            if candidate[box] < math.inf:
                cuda.atomic.min(real, R_UB, candidate[box])

    return offer_candidates


def offer_candidates(dtape: DeviceTape, n_children: int, best_point, feas_tol: float, candidate, real) -> None:
    """Launch :func:`candidate_kernel` over the points ``best_point[:n_children]`` (device (B, d)):
    ``candidate`` (device (B,)) and the incumbent ``real[R_UB]`` as it says; no synchronisation."""
    workspace = dtape.workspace
    candidate_kernel()[workspace.grid(n_children), THREADS_PER_BLOCK](
        *dtape.arrays,
        dtape.tape.n_ineq,
        dtape.varying,
        n_children,
        best_point,
        float(feas_tol),
        candidate,
        real,
        workspace.slots,
    )


@cuda.jit(device=True)
def _point_value(
    op,
    arg0,
    arg1,
    const_lo,
    const_hi,
    outputs,
    n_ineq,
    varying,
    point,
    feas_tol,
    x,
    plain_lo,
    plain_hi,
    unused,
    kink,
    vlo,
    vhi,
    whole,
    low_lo,
    low_hi,
):
    """f's upper end at ``point`` where it is feasible and f defined there, else +inf."""
    for i in range(x.shape[0]):
        if point[i] != point[i]:
            return math.inf
        x[i, 0] = point[i]
    run_tape(op, arg0, arg1, const_lo, const_hi, varying, x, x, 1, plain_lo, plain_hi, False, unused, unused, kink)
    run_point_tape(op, arg0, arg1, const_lo, const_hi, x, 1, plain_lo, plain_hi, vlo, vhi, whole, low_lo, low_hi)
    f_lo = vlo[outputs[0], 0]
    f_hi = vhi[outputs[0], 0]
    if f_lo != f_lo:
        return math.inf
    for o in range(1, len(outputs)):
        lo = vlo[outputs[o], 0]
        hi = vhi[outputs[o], 0]
        if o <= n_ineq:
            if not hi <= 0.0:
                return math.inf
        elif not (lo >= -feas_tol and hi <= feas_tol):
            return math.inf
    return f_hi


@functools.cache
def keep_kernel():
    """Per bounded child, the CPU's rules: emptied by contraction, pruned at the incumbent; with
    Lagrangians, L's bound and hull (:func:`lagrangian_kernel`), and where f was bounded too
    (``skip_f`` not set) the larger bound and the hulls intersected; proved infeasible, dropped; cut
    to its hull below the level (pruned when empty); pruned at the level; else appended to ``q_out``.
    ``kept_lb[box]`` is its bound when kept, +inf otherwise."""

    stamp = SOURCE_STAMP  # in the closure: the disk cache's key (kernels.SOURCE_STAMP)

    @cuda.jit(cache=True)
    def keep(
        n_children,
        child_lo,
        child_hi,
        emptied,
        lb_f,
        hull_lo_f,
        hull_hi_f,
        threshold,
        with_l,
        skip_f,
        lb_l,
        hull_lo_l,
        hull_hi_l,
        eps_abs,
        eps_rel,
        real,
        count,
        kept_lb,
        out_lo,
        out_hi,
        out_lb,
    ):
        if stamp < 0:
            return
        box = _thread()
        if box >= n_children:
            return
        kept_lb[box] = math.inf
        if emptied[box]:
            cuda.atomic.min(real, R_PRUNED, real[R_UB])
            return
        level_then = threshold[box]
        n_vars = child_lo.shape[1]
        lo = cuda.local.array(MAX_VARS, float64)
        hi = cuda.local.array(MAX_VARS, float64)
        hull_finite = True
        if with_l and skip_f[box]:  # L's bound reached the level: f was not bounded
            lb = lb_l[box]
            for i in range(n_vars):
                lo[i] = hull_lo_l[box, i]
                hi[i] = hull_hi_l[box, i]
        else:
            lb = lb_f[box]
            for i in range(n_vars):
                lo[i] = hull_lo_f[box, i]
                hi[i] = hull_hi_f[box, i]
            if with_l:
                lb = max(lb, lb_l[box])
                for i in range(n_vars):
                    lo[i] = _fmax(lo[i], hull_lo_l[box, i])
                    hi[i] = _fmin(hi[i], hull_hi_l[box, i])
        if not lb < math.inf:  # proved infeasible
            return
        for i in range(n_vars):
            hull_finite = hull_finite and math.isfinite(lo[i]) and math.isfinite(hi[i])
        cut = False
        for i in range(n_vars):
            if hull_finite:
                lo[i] = max(child_lo[box, i], lo[i])
                hi[i] = min(child_hi[box, i], hi[i])
                if lo[i] > hi[i]:  # nothing below the level
                    cuda.atomic.min(real, R_PRUNED, level_then)
                    return
                cut = cut or lo[i] > child_lo[box, i] or hi[i] < child_hi[box, i]
            else:
                lo[i] = child_lo[box, i]
                hi[i] = child_hi[box, i]
        if cut:  # the cut subdomains' feasible points are all at or above the level
            cuda.atomic.min(real, R_PRUNED, level_then)
        if lb >= prune_level(real[R_UB], eps_abs, eps_rel):
            cuda.atomic.min(real, R_PRUNED, lb)
            return
        slot = cuda.atomic.add(count, C_OUT, 1)
        for i in range(n_vars):
            out_lo[slot, i] = lo[i]
            out_hi[slot, i] = hi[i]
        out_lb[slot] = lb
        kept_lb[box] = lb
        cuda.atomic.min(real, R_OPEN_MIN, lb)
        cuda.atomic.min(real, R_BEST_KEPT, lb)

    return keep


@cuda.jit(cache=True)  # its code is all in this file: the cache checks this file
def claim(n_children, candidate, kept_lb, real, count):
    """Name the lowest child whose candidate is the incumbent and the lowest kept child whose bound
    is the lowest kept bound."""
    box = _thread()
    if box >= n_children:
        return
    if candidate[box] < math.inf and candidate[box] == real[R_UB]:
        cuda.atomic.min(count, C_UB_CHILD, box)
    if kept_lb[box] < math.inf and kept_lb[box] == real[R_BEST_KEPT]:
        cuda.atomic.min(count, C_BEST_KEPT, box)
