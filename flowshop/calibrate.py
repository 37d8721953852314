"""Subtree roots of a work unit, exact (capped) subtree counts and probes of single subtrees.

Tools for estimators of the nodes left that learn from the part of a proof already explored
(``benchmarks/eta_calibration.py``): a work unit (intervals of [0, n!)) is a union of maximal
subtrees whose every leaf lies in the work, plus the few partial nodes on their boundary.
:func:`Calibrator.roots` lists those subtree roots (prefix digits, depth, the root's LB), and for
one root :func:`Calibrator.count` walks its subtree exactly (stopping past a cap) while
:func:`Calibrator.probes` draws Knuth probes of it.  The tree is ``flowshop.estimate``'s: the
explorer's child order, bound, branching and pruning under a fixed UB, through the same njit
bodies; a node is counted where its leftmost leaf lies in the work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .choices import DEFAULT_BOUND, DEFAULT_BRANCH, bound_code, branch_code
from .estimate import _enter, _overlap, work_rows
from .factoradic import digits_to_int, factorial
from .intervals import WorkUnit
from .ivm import IVM, Problem, set_root

_jit = numba.njit(cache=True, nogil=True)


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
def _copy_row_lbs(ivm, level, lbrow):
    """The LBs of row ``level``'s cells in its branching direction, just after it was bounded."""
    dirs, work = ivm[2], ivm[9]
    lbf, lbb = work[0], work[1]
    n = lbrow.shape[0]
    for c in range(n - level):
        lbrow[level, c] = lbf[c] if dirs[level] == 0 else lbb[c]


@_jit
def find_roots(p, bound_data, mode, branch, ub, ivm, starts, ends, prefixes, depths, lbs, partial_by_depth):
    """The maximal subtrees of the work: their roots' prefixes (rows of ``prefixes``), depths and LBs
    (in the parent's branching direction); ``partial_by_depth`` gets the counted nodes whose subtree
    is only partly in the work.  Returns the number of roots (-1 when the arrays are too small)."""
    M, V = ivm[0], ivm[1]
    n = p.shape[0]
    k = starts.shape[0]
    found = np.zeros(4, np.int64)
    lo = np.zeros(n + 1, np.int64)
    hi = np.zeros(n + 1, np.int64)
    lbrow = np.zeros((n, n), np.int64)
    count = 0
    set_root(p, bound_data, mode, branch, ub, ivm)
    _overlap(V, 0, starts, ends, 0, k, found)
    if found[0] >= found[1]:
        return 0
    if found[3]:
        depths[0] = 0
        lbs[0] = 0
        return 1
    partial_by_depth[0] += found[2]
    if n == 1:
        return 0
    _copy_row_lbs(ivm, 0, lbrow)
    lo[0], hi[0] = found[0], found[1]
    level = 0
    V[0] = 0
    while True:
        if V[level] >= n - level:
            if level == 0:
                return count
            V[level] = 0
            level -= 1
            V[level] += 1
            continue
        if M[level, V[level]] < 0:
            V[level] += 1
            continue
        _overlap(V, level + 1, starts, ends, lo[level], hi[level], found)
        if found[0] >= found[1]:
            V[level] += 1
            continue
        if found[3]:  # the whole subtree is in the work: a root
            if count >= depths.shape[0]:
                return -1
            for l in range(level + 1):
                prefixes[count, l] = V[l]
            depths[count] = level + 1
            lbs[count] = lbrow[level, V[level]]
            count += 1
            V[level] += 1
            continue
        partial_by_depth[level + 1] += found[2]
        if level + 1 == n - 1:
            V[level] += 1
            continue
        _enter(p, bound_data, mode, branch, ub, ivm, level)
        level += 1
        _copy_row_lbs(ivm, level, lbrow)
        lo[level], hi[level] = found[0], found[1]
        V[level] = 0


@_jit
def _go_to(p, bound_data, mode, branch, ub, ivm, prefix, depth):
    """Decode the node of ``prefix[:depth]``: its children's row bounded (when they are not leaves)."""
    V = ivm[1]
    set_root(p, bound_data, mode, branch, ub, ivm)
    for l in range(depth):
        V[l] = prefix[l]
        if l + 1 < p.shape[0] - 1:
            _enter(p, bound_data, mode, branch, ub, ivm, l)
        else:
            break


@_jit
def walk_subtree(p, bound_data, mode, branch, ub, ivm, prefix, depth, limit, position):
    """Walk the subtree rooted at ``prefix[:depth]`` depth first (the explorer's order) for at most
    ``limit`` nodes, its root included: its node count when it has at most ``limit``, else -1, with
    ``position`` set to the factoradic position of the next node's leftmost leaf (where an explorer
    stopped there resumes)."""
    M, V = ivm[0], ivm[1]
    n = p.shape[0]
    if depth >= n - 1:
        return 1
    _go_to(p, bound_data, mode, branch, ub, ivm, prefix, depth)
    total = 1
    level = depth
    V[level] = 0
    while True:
        if V[level] >= n - level:
            if level == depth:
                return total
            V[level] = 0
            level -= 1
            V[level] += 1
            continue
        if M[level, V[level]] < 0:
            V[level] += 1
            continue
        if total >= limit:
            for l in range(n):
                position[l] = V[l] if l <= level else 0
            return -1
        total += 1
        if level + 1 == n - 1:
            V[level] += 1
            continue
        _enter(p, bound_data, mode, branch, ub, ivm, level)
        level += 1
        V[level] = 0


@_jit
def probe_subtree(p, bound_data, mode, branch, ub, ivm, prefix, depth, alpha, seed, out, by_depth):
    """Fill ``out`` with Knuth probe estimates of the subtree at ``prefix[:depth]`` (root included),
    children drawn with weights ``(UB - LB)**alpha``; ``by_depth`` gets the probes' summed
    per-depth estimates (divide by ``out.size`` for their mean)."""
    V = ivm[1]
    n = p.shape[0]
    np.random.seed(seed)
    weight = np.zeros(n, np.float64)
    for probe in range(out.shape[0]):
        total = 1.0
        by_depth[depth] += 1.0
        if depth >= n - 1:
            out[probe] = total
            continue
        _go_to(p, bound_data, mode, branch, ub, ivm, prefix, depth)
        scale = 1.0
        for level in range(depth, n - 1):
            mass = row_weights(ivm, level, ub, alpha, weight)
            if mass == 0.0:
                break
            chosen = draw_cell(weight, n - level, mass)
            scale *= mass / weight[chosen]
            total += scale
            by_depth[level + 1] += scale
            V[level] = chosen
            if level + 1 == n - 1:
                break
            _enter(p, bound_data, mode, branch, ub, ivm, level)
        out[probe] = total


@dataclass(frozen=True)
class Roots:
    """Maximal subtrees of a work unit: ``prefixes[i, :depths[i]]`` is root i, ``lbs[i]`` its LB;
    ``partial`` counts the nodes (by depth) that the work holds outside these subtrees."""

    prefixes: np.ndarray
    depths: np.ndarray
    lbs: np.ndarray
    partial: np.ndarray

    def __len__(self) -> int:
        return int(self.depths.size)


class Calibrator:
    """Subtree roots, exact counts and probes of one instance's tree (one IVM's scratch arrays)."""

    def __init__(
        self, p: np.ndarray, *, bound: str = DEFAULT_BOUND, branch: str = DEFAULT_BRANCH, alpha: float = 1.0
    ) -> None:
        self.problem = Problem(p, bound_code(bound), branch_code(branch))
        self.ivm = IVM(self.problem)
        self.alpha = float(alpha)

    def _args(self, ub: int) -> tuple:
        pr = self.problem
        return pr.p, pr.bound_data, pr.mode, pr.branch, int(ub), self.ivm.arrays

    def roots(self, work: WorkUnit, ub: int) -> Roots:
        """The roots of the maximal subtrees of ``work`` (a walk of O(n^2) nodes per interval)."""
        n = self.problem.n
        partial = np.zeros(n + 1, np.int64)
        size = max(64, 2 * n * n * max(1, len(work)))
        while True:
            prefixes = np.zeros((size, n), np.int32)
            depths = np.zeros(size, np.int64)
            lbs = np.zeros(size, np.int64)
            count = 0
            if work:
                count = find_roots(*self._args(ub), *work_rows(work), prefixes, depths, lbs, partial)
            if count >= 0:
                return Roots(prefixes[:count], depths[:count], lbs[:count], partial)
            partial[:] = 0
            size *= 4

    def count(self, prefix: np.ndarray, depth: int, ub: int, cap: int = 1 << 62) -> int:
        """The nodes of the subtree at ``prefix[:depth]`` (root included); -1 when above ``cap``."""
        position = np.zeros(self.problem.n, np.int32)
        return int(
            walk_subtree(*self._args(ub), np.ascontiguousarray(prefix, np.int32), int(depth), int(cap), position)
        )

    def probes(
        self, prefix: np.ndarray, depth: int, ub: int, count: int, seed: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """``count`` probe estimates of the subtree at ``prefix[:depth]`` and their mean per depth."""
        out = np.zeros(count, np.float64)
        by_depth = np.zeros(self.problem.n + 1, np.float64)
        probe_subtree(
            *self._args(ub), np.ascontiguousarray(prefix, np.int32), int(depth), self.alpha, int(seed), out, by_depth
        )
        return out, by_depth / max(count, 1)

    def cut(self, nodes: int, ub: int) -> WorkUnit:
        """What is left of the whole tree after a depth-first walk of ``nodes`` nodes under a fixed
        ``ub``: ``[position, n!)`` (empty when the tree is smaller), as a one-thread explorer that
        never improves ``ub`` would leave it."""
        n = self.problem.n
        position = np.zeros(n, np.int32)
        if walk_subtree(*self._args(ub), np.zeros(n, np.int32), 0, int(nodes), position) >= 0:
            return WorkUnit.empty(n)
        return WorkUnit(n, [(digits_to_int(position), factorial(n))])
