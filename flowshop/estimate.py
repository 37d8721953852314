"""How many B&B nodes are left in a work unit: random probes of the explorer's own tree.

A probe (Knuth 1975, "Estimating the efficiency of backtrack programs") walks from the root to
a leaf of the tree that ``flowshop.ivm`` explores, choosing one child at random at each node, and
returns ``sum over its path of 1 / P(reaching that node)`` for the nodes that count: an unbiased
estimate of the number of nodes.  The tree is the explorer's exactly, through its own njit
bodies: the same child order (the IVM's M rows), bound, dynamic branching direction and pruning
(LB >= UB) under a fixed UB.  Work is a set of intervals of [0, n!): a node is counted where its
leftmost leaf lies in the work (the explorers' rule, ``flowshop.ivm``), and a probe only enters
children whose subtree meets the work, so it estimates the nodes an explorer of that work
decomposes, with no probe wasted on explored parts.

Children are drawn with probability proportional to ``(UB - LB)**alpha`` (importance sampling:
a child whose bound is far below the UB tends to hold a larger subtree); any positive weights
keep the estimate unbiased, ``alpha = 0`` is Knuth's uniform choice.  Intervals are factoradic
digit rows (``WorkUnit.to_digit_arrays``), an end of n! as the row ``[n, 0, ...]``, which
compares above every position.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np

from ..gpu.flowshop.factoradic import limbs_to_digits
from .choices import DEFAULT_BOUND, DEFAULT_BRANCH, bound_code, branch_code
from .intervals import WorkUnit
from .ivm import IVM, Problem, _bound_and_prune, _descend, _fill_row, set_root
from .packed import PackedUnit

ALPHA = 1.0  # child weights (UB - LB)**ALPHA: chosen on benchmarks/eta.py
BATCH = 64  # probes per call into numba between clock readings

_jit = numba.njit(cache=True, nogil=True)


@dataclass(frozen=True)
class NodeEstimate:
    """An estimate of the nodes left: ``nodes`` (the probes' mean) and ``low``-``high``, the 2.5 %
    and 97.5 % quantiles of that mean under a bootstrap of the probes: the sampling uncertainty
    only (a heavy tail no probe reached is in neither)."""

    nodes: float
    low: float
    high: float
    probes: int
    seconds: float


@_jit
def _cmp_prefix(V, length, x, i):
    """Compare ``V[:length]`` with ``x[i, :length]``: -1, 0 or 1."""
    for l in range(length):
        if V[l] != x[i, l]:
            return -1 if V[l] < x[i, l] else 1
    return 0


@_jit
def _zero_tail(x, i, length):
    for l in range(length, x.shape[1]):
        if x[i, l] != 0:
            return False
    return True


@_jit
def _first_inside(V, length, x, i):
    """``x[i] <= V[:length]·0``: the subtree's leftmost leaf is at or after position ``x[i]``."""
    c = _cmp_prefix(V, length, x, i)
    return c > 0 or (c == 0 and _zero_tail(x, i, length))


@_jit
def _starts_before_end(V, length, ends, i):
    """``V[:length]·0 < ends[i]``."""
    c = _cmp_prefix(V, length, ends, i)
    return c < 0 or (c == 0 and not _zero_tail(ends, i, length))


@_jit
def _overlap(V, length, starts, ends, lo, hi, out):
    """The rows ``[out[0], out[1])`` of ``[lo, hi)`` whose interval meets the subtree of the prefix
    ``V[:length]``; ``out[2]`` = 1 when its leftmost leaf is in the work, ``out[3]`` = 1 when the
    whole subtree is."""
    a, b = lo, hi  # first row whose end is after the subtree's first leaf (ends increase)
    while a < b:
        mid = (a + b) // 2
        if _starts_before_end(V, length, ends, mid):
            b = mid
        else:
            a = mid + 1
    first = a
    a, b = first, hi  # first row that starts after the subtree's last leaf (starts increase)
    while a < b:
        mid = (a + b) // 2
        if _cmp_prefix(V, length, starts, mid) >= 0:
            a = mid + 1
        else:
            b = mid
    out[0], out[1] = first, a
    inside = first < a and _first_inside(V, length, starts, first)
    out[2] = int(inside)
    out[3] = int(inside and a - first == 1 and _cmp_prefix(V, length, ends, first) < 0)


@_jit
def _enter(p, bound_data, mode, branch, ub, ivm, level):
    """Descend from the node at ``level`` into its cell ``V[level]``; bound the new node's children
    unless they are leaves."""
    M, V, dirs, F, B, R, end, sc, best, work, scheduled = ivm
    lbf, lbb, front, back, remain, rb, fr, child_front, child_back, child_remain = work
    min_heads, min_tails, pairs, lags, orders = bound_data
    n = p.shape[0]
    _descend(p, M[level, V[level]], dirs[level], level, F, B, R)
    if level + 1 < n - 1:
        _fill_row(M, V, level)
        _bound_and_prune(
            level + 1,
            p,
            min_heads,
            min_tails,
            pairs,
            lags,
            orders,
            mode,
            branch,
            M,
            dirs,
            F,
            B,
            R,
            ub,
            lbf,
            lbb,
            front,
            back,
            remain,
            rb,
            fr,
            child_front,
            child_back,
            child_remain,
            scheduled,
            sc,
            False,
        )


@_jit
def child_weight(ub, lb, alpha):
    """A child's probe weight ``(UB - LB)**alpha`` (1 where LB >= UB)."""
    return float(ub - lb) ** alpha if ub > lb else 1.0


@_jit
def row_weights(ivm, level, ub, alpha, weight):
    """The probe weights of row ``level``'s cells into ``weight`` (0 for pruned cells); their sum."""
    M, dirs, work = ivm[0], ivm[2], ivm[9]
    lbf, lbb = work[0], work[1]
    mass = 0.0
    for c in range(M.shape[0] - level):
        weight[c] = 0.0
        if M[level, c] < 0:
            continue
        weight[c] = child_weight(ub, lbf[c] if dirs[level] == 0 else lbb[c], alpha)
        mass += weight[c]
    return mass


@_jit
def draw_cell(weight, cells, mass):
    """One of the first ``cells`` cells, drawn with probability ``weight[c] / mass`` (``mass`` > 0:
    the sum of the positive weights)."""
    draw = np.random.random() * mass
    chosen = -1
    for c in range(cells):
        if weight[c] > 0.0:
            chosen = c
            draw -= weight[c]
            if draw < 0.0:
                break
    return chosen


@_jit
def probe_batch(p, bound_data, mode, branch, ub, ivm, starts, ends, alpha, seed, out):
    """Fill ``out`` with independent probe estimates of the nodes counted in the work (rows
    ``starts``/``ends``, sorted and disjoint, not empty); ``seed`` seeds this thread's generator."""
    M, V, dirs, F, B, R, end, sc, best, work, scheduled = ivm
    lbf, lbb = work[0], work[1]
    n = p.shape[0]
    np.random.seed(seed)
    k = starts.shape[0]
    found = np.zeros(4, np.int64)
    lo_of = np.zeros(n, np.int64)  # per eligible cell: its rows [lo, hi), flags
    hi_of = np.zeros(n, np.int64)
    inside_of = np.zeros(n, np.int64)
    full_of = np.zeros(n, np.int64)
    weight = np.zeros(n, np.float64)
    set_root(p, bound_data, mode, branch, ub, ivm)
    _overlap(V, 0, starts, ends, 0, k, found)
    root_lo, root_hi, root_inside, root_full = found[0], found[1], found[2], found[3]
    for probe in range(out.shape[0]):
        if probe > 0:
            set_root(p, bound_data, mode, branch, ub, ivm)
        lo, hi, full = root_lo, root_hi, root_full
        scale = 1.0
        total = float(root_inside)
        for level in range(n - 1):
            # the children (cells of row ``level``) that exist and meet the work, and their weights
            cells = n - level
            mass = 0.0
            for c in range(cells):
                weight[c] = 0.0
                if M[level, c] < 0:
                    continue
                if full:
                    inside_of[c], full_of[c] = 1, 1
                else:
                    V[level] = c
                    _overlap(V, level + 1, starts, ends, lo, hi, found)
                    if found[0] >= found[1]:
                        continue
                    lo_of[c], hi_of[c], inside_of[c], full_of[c] = found[0], found[1], found[2], found[3]
                lb = lbf[c] if dirs[level] == 0 else lbb[c]
                weight[c] = child_weight(ub, lb, alpha)
                mass += weight[c]
            if mass == 0.0:
                break
            chosen = draw_cell(weight, cells, mass)
            scale *= mass / weight[chosen]
            total += scale * inside_of[chosen]
            V[level] = chosen
            if not full:
                lo, hi, full = lo_of[chosen], hi_of[chosen], full_of[chosen]
            if level + 1 == n - 1:
                break  # the node's only child is a leaf: leaves are not nodes
            _enter(p, bound_data, mode, branch, ub, ivm, level)
        out[probe] = total


@_jit
def count_nodes(p, bound_data, mode, branch, ub, ivm, starts, ends, by_depth):
    """Add to ``by_depth`` (n + 1 entries) the nodes that an explorer of the work decomposes under a
    fixed ``ub``, at each depth (every child that a probe could enter, entered: a depth-first walk;
    for tests and small trees)."""
    M, V, dirs, F, B, R, end, sc, best, work, scheduled = ivm
    n = p.shape[0]
    k = starts.shape[0]
    found = np.zeros(4, np.int64)
    lo = np.zeros(n + 1, np.int64)  # the rows meeting the node at each level, and whether it is inside the work
    hi = np.zeros(n + 1, np.int64)
    full = np.zeros(n + 1, np.int64)
    set_root(p, bound_data, mode, branch, ub, ivm)
    _overlap(V, 0, starts, ends, 0, k, found)
    lo[0], hi[0], full[0] = found[0], found[1], found[3]
    by_depth[0] += found[2]
    if n == 1:
        return
    level = 0
    V[0] = 0
    while True:
        if V[level] >= n - level:  # row done: back to the parent's next cell
            if level == 0:
                return
            V[level] = 0
            level -= 1
            V[level] += 1
            continue
        if M[level, V[level]] < 0:
            V[level] += 1
            continue
        if full[level]:
            found[0], found[1], found[2], found[3] = lo[level], hi[level], 1, 1
        else:
            _overlap(V, level + 1, starts, ends, lo[level], hi[level], found)
            if found[0] >= found[1]:
                V[level] += 1
                continue
        by_depth[level + 1] += found[2]
        if level + 1 == n - 1:
            V[level] += 1
            continue
        _enter(p, bound_data, mode, branch, ub, ivm, level)
        level += 1
        lo[level], hi[level], full[level] = found[0], found[1], found[3]
        V[level] = 0


def load_probes() -> None:
    """Load (or compile) the probes' code: on a small read-only int32 instance, the array type of
    every run's ``p`` (numba compiles per type, not per size, bound or branching rule)."""
    small = np.ones((6, 2), np.int32)
    small.flags.writeable = False
    Prober(small).probes(WorkUnit.full(6), int(small.sum()) + 1, 1)


def work_rows(work: WorkUnit | PackedUnit) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)``: the work's intervals as factoradic digit rows, an end of n! as ``[n, 0, ...]``.

    Through the packed limbs and numba (``gpu.flowshop.factoradic.limbs_to_digits``): a GPU's work of 20,000
    intervals converts in milliseconds, where Python integers took 0.3 s, the whole probing time."""
    packed = work if isinstance(work, PackedUnit) else PackedUnit.from_work_unit(work)
    n = packed.n
    vectors = np.zeros((2 * len(packed), n + 1), np.int32)  # (n+1)-digit vectors: [1, 0, ...] is n!
    limbs_to_digits(np.ascontiguousarray(packed.bounds.reshape(2 * len(packed), -1)), vectors)
    starts, ends = vectors[0::2, 1:], vectors[1::2, 1:].copy()
    ends[vectors[1::2, 0] != 0, 0] = n
    return np.ascontiguousarray(starts), np.ascontiguousarray(ends)


class Prober:
    """Probes of one instance's tree under a bound and a branching rule (one IVM's scratch arrays)."""

    def __init__(
        self, p: np.ndarray, *, bound: str = DEFAULT_BOUND, branch: str = DEFAULT_BRANCH, alpha: float = ALPHA
    ) -> None:
        self.problem = Problem(p, bound_code(bound), branch_code(branch))
        self.ivm = IVM(self.problem)
        self.alpha = float(alpha)

    def probes(self, work: WorkUnit, ub: int, count: int, seed: int = 0) -> np.ndarray:
        """``count`` probe estimates of the nodes left in ``work`` under ``ub`` (zeros for no work)."""
        if not work:
            return np.zeros(count, np.float64)
        return self._probes(work_rows(work), ub, count, seed)

    def _probes(self, rows: tuple[np.ndarray, np.ndarray], ub: int, count: int, seed: int) -> np.ndarray:
        """``count`` probes of the work given as its digit rows (``work_rows``: made once per estimate,
        they cost more than the probes for a work of many intervals)."""
        out = np.zeros(count, np.float64)
        if count:
            pr = self.problem
            probe_batch(pr.p, pr.bound_data, pr.mode, pr.branch, int(ub), self.ivm.arrays, *rows, self.alpha, seed, out)
        return out

    def exact(self, work: WorkUnit, ub: int) -> int:
        """The exact node count of ``work`` under a fixed ``ub`` (a full walk: small trees only)."""
        return int(self.exact_by_depth(work, ub).sum())

    def exact_by_depth(self, work: WorkUnit, ub: int) -> np.ndarray:
        """The exact node count of ``work`` under a fixed ``ub`` at each depth 0..n (a full walk)."""
        pr = self.problem
        by_depth = np.zeros(pr.n + 1, np.int64)
        if work:
            count_nodes(pr.p, pr.bound_data, pr.mode, pr.branch, int(ub), self.ivm.arrays, *work_rows(work), by_depth)
        return by_depth

    def estimate(
        self, work: WorkUnit, ub: int, *, seconds: float = 0.3, max_probes: int = 1 << 20, seed: int = 0
    ) -> NodeEstimate:
        """Probe ``work`` for about ``seconds`` (at least one batch) and summarise (:func:`summarise`)."""
        started = time.perf_counter()
        if not work:
            return NodeEstimate(0.0, 0.0, 0.0, 0, 0.0)
        rows = work_rows(work)
        batches = []
        done = 0
        while done < max_probes:
            count = min(BATCH, max_probes - done)
            batches.append(self._probes(rows, ub, count, seed=(seed * 1_000_003 + len(batches)) % (1 << 32)))
            done += count
            if time.perf_counter() - started >= seconds:
                break
        return summarise(np.concatenate(batches), time.perf_counter() - started)


def summarise(values: np.ndarray, seconds: float = 0.0, resamples: int = 200, seed: int = 0) -> NodeEstimate:
    """The mean of probe estimates and a bootstrap percentile interval (2.5 %-97.5 %) of that mean."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return NodeEstimate(math.nan, math.nan, math.nan, 0, seconds)
    mean = float(values.mean())
    rng = np.random.default_rng(seed)
    means = np.array([values[rng.integers(0, values.size, values.size)].mean() for _ in range(resamples)])
    low, high = np.quantile(means, [0.025, 0.975])
    return NodeEstimate(mean, float(min(low, mean)), float(max(high, mean)), int(values.size), seconds)
