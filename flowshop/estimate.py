"""How many B&B nodes are left in a work unit: sampled enumerations of the explorer's own tree.

An enumeration (stochastic enumeration, Vaisman & Kroese 2015, after Knuth 1975 and Purdom 1978;
"go with the winners", Aldous & Vazirani 1994) goes down the tree depth by depth, keeping at most
K nodes of each depth, each with a weight.  It counts every child of the kept nodes with its
parent's weight, and where there are more than K children it keeps a weighted sample of them
(:func:`sample_enumeration`): an unbiased estimate of the number of nodes, and the exact number
where no depth is wider than K.  An estimate fits K to its time (:meth:`Prober.estimate`).  A random walk from the root (Knuth's probes, which this
module used before) rarely reaches the bushy part of a 50-job tree: one second of them estimated
ta042, ta043 and ta050 at 0.002-0.26 of their sizes (docs/performance.md, "The ETA").

The tree is the explorer's exactly, through its own njit bodies: the same child order (the IVM's M
rows), bound, dynamic branching direction and pruning (LB >= UB) under a fixed UB.  Work is a set of
intervals of [0, n!): a node is counted where its leftmost leaf lies in the work (the explorers'
rule, ``flowshop.ivm``), and an enumeration only goes into children whose subtree meets the work,
so it estimates the nodes an explorer of that work decomposes.  Intervals are factoradic digit
rows (``WorkUnit.to_digit_arrays``), an end of n! as the row ``[n, 0, ...]``, which compares above
every position.
"""

from __future__ import annotations

import dataclasses
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from ..gpu.flowshop.factoradic import limbs_to_digits
from .choices import DEFAULT_BOUND, DEFAULT_BRANCH, bound_code, branch_code
from .intervals import WorkUnit
from .ivm import IVM, Problem, _bound_and_prune, _descend, _fill_row, set_root
from .packed import PackedUnit

KEPT_LIMITS = (256, 16384)  # an estimate's nodes kept per depth: fitted to its time, between these
THREAD_BYTES = 64 << 20  # at most for one thread's node stores and children (fewer nodes kept on large n)
MIN_SAMPLES = 2  # enumerations per estimate at least, for a range

_jit = numba.njit(cache=True, nogil=True)


@dataclass(frozen=True)
class NodeEstimate:
    """An estimate of the nodes left: ``nodes`` (the mean of ``samples`` enumerations, each keeping
    ``kept`` nodes per depth) and ``low``-``high``, the 2.5 % and 97.5 % quantiles of that mean
    under a bootstrap of the enumerations: the sampling uncertainty only (a heavy tail that no
    enumeration kept is in neither)."""

    nodes: float
    low: float
    high: float
    samples: int
    seconds: float
    kept: int = 0


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
def _load_node(ivm, level, nodes, i):
    """Put node ``i`` of ``nodes`` (kept at ``level``) into the IVM's rows: its path ``V[:level]``,
    its row of children with their pruning flags, its direction, front, back and remain."""
    M, V, dirs, F, B, R = ivm[0], ivm[1], ivm[2], ivm[3], ivm[4], ivm[5]
    paths, rows, directions, fronts, backs, remains = nodes
    for l in range(level):
        V[l] = paths[i, l]
    for c in range(M.shape[0] - level):
        M[level, c] = rows[i, c]
    dirs[level] = directions[i]
    for k in range(F.shape[1]):
        F[level, k], B[level, k], R[level, k] = fronts[i, k], backs[i, k], remains[i, k]


@_jit
def _keep_node(ivm, level, nodes, i):
    """Copy the IVM's node at ``level`` (entered and bounded) into slot ``i`` of ``nodes``."""
    M, V, dirs, F, B, R = ivm[0], ivm[1], ivm[2], ivm[3], ivm[4], ivm[5]
    paths, rows, directions, fronts, backs, remains = nodes
    for l in range(level):
        paths[i, l] = V[l]
    for c in range(M.shape[0] - level):
        rows[i, c] = M[level, c]
    directions[i] = dirs[level]
    for k in range(F.shape[1]):
        fronts[i, k], backs[i, k], remains[i, k] = F[level, k], B[level, k], R[level, k]


def _node_store(slots: int, n: int, m: int):
    """Arrays for ``slots`` kept nodes (``_keep_node``)."""
    return (
        np.zeros((slots, n), np.int32),
        np.zeros((slots, n), np.int32),
        np.zeros(slots, np.int8),
        np.zeros((slots, m), np.int32),
        np.zeros((slots, m), np.int32),
        np.zeros((slots, m), np.int32),
    )


@_jit
def _open_cells(M, level):
    """The cells of row ``level`` not pruned: the node's children under the UB."""
    count = 0
    for c in range(M.shape[0] - level):
        if M[level, c] >= 0:
            count += 1
    return count


@_jit
def sample_enumeration(p, bound_data, mode, branch, ub, ivm, starts, ends, kept, fresh, slots, seed):
    """One stochastic enumeration of the nodes counted in the work (rows ``starts``/``ends``,
    sorted and disjoint, not empty): an unbiased estimate of their number.

    Depth by depth, every child of the kept nodes that exists and meets the work is counted with
    its parent's weight, and bounded to see how many children of its own it has (its *share*; a
    node at the depth above the leaves' has share 1 while it has any).  When more children have a
    share than ``kept`` has slots (``K``), ``K`` points spaced evenly through the sum of weight x
    share, from a random offset, choose which go on (systematic resampling), and each chosen child
    goes on once, its weight scaled by its number of points over its expected number.  A child
    with no children of its own holds no node below it, so leaving it is exact.  The share is the
    sampling's importance: on ta050 the log subtree size of a node at depth 12 correlates 0.92 with
    its number of children, and 0.09 with its bound's gap to the UB.  With ``K`` at least the
    width of the tree the count is exact.  ``kept`` and ``fresh`` are two node stores
    (``_node_store``) of at least ``K + 1`` slots (a rounding of the offsets can add one point)."""
    M, V, dirs, F, B, R, end, sc, best, work, scheduled = ivm
    n = p.shape[0]
    np.random.seed(seed)
    found = np.zeros(4, np.int64)
    # the kept nodes: their rows of the work [lo, hi), whether their subtree is inside it, weight
    lo, hi, full = np.zeros(slots + 1, np.int64), np.zeros(slots + 1, np.int64), np.zeros(slots + 1, np.int64)
    weight = np.zeros(slots + 1)
    next_lo, next_hi, next_full, next_weight = (
        np.zeros_like(lo),
        np.zeros_like(hi),
        np.zeros_like(full),
        np.zeros_like(weight),
    )
    # the children of a depth with a share: parent slot, cell, rows of the work, inside, weight, share
    most = (slots + 1) * n
    parent, cell = np.zeros(most, np.int32), np.zeros(most, np.int32)
    child_lo, child_hi, child_full = np.zeros(most, np.int32), np.zeros(most, np.int32), np.zeros(most, np.int8)
    child_weight, share = np.zeros(most), np.zeros(most)
    set_root(p, bound_data, mode, branch, ub, ivm)
    _overlap(V, 0, starts, ends, 0, starts.shape[0], found)
    total = float(found[2])
    lo[0], hi[0], full[0], weight[0] = found[0], found[1], found[3], 1.0
    _keep_node(ivm, 0, kept, 0)
    count = 1
    for level in range(n - 1):
        children = 0
        mass = 0.0
        for i in range(count):
            _load_node(ivm, level, kept, i)
            for c in range(n - level):
                if M[level, c] < 0:
                    continue
                V[level] = c
                if full[i]:
                    found[0], found[1], found[2], found[3] = lo[i], hi[i], 1, 1
                else:
                    _overlap(V, level + 1, starts, ends, lo[i], hi[i], found)
                    if found[0] >= found[1]:
                        continue
                total += weight[i] * found[2]
                if level + 1 == n - 1:
                    continue  # its only child is a leaf: leaves are not nodes
                _enter(p, bound_data, mode, branch, ub, ivm, level)
                below = _open_cells(M, level + 1)
                if below == 0:
                    continue
                parent[children], cell[children] = i, c
                child_lo[children], child_hi[children], child_full[children] = found[0], found[1], found[3]
                child_weight[children] = weight[i]
                share[children] = 1.0 if level + 2 == n - 1 else float(below)
                mass += weight[i] * share[children]
                children += 1
        if children == 0:
            break
        if children > slots:  # systematic resampling; a child not chosen weighs 0 from here on
            spacing = mass / slots
            offset = np.random.random() * spacing
            below_sum = 0.0
            for t in range(children):
                first = np.ceil((below_sum - offset) / spacing) if below_sum > offset else 0.0
                below_sum += child_weight[t] * share[t]
                points = np.ceil((below_sum - offset) / spacing) - first
                child_weight[t] = points * spacing / share[t] if points > 0 else 0.0
        count = 0
        loaded = -1
        for t in range(children):
            if child_weight[t] == 0.0:
                continue
            if parent[t] != loaded:
                loaded = parent[t]
                _load_node(ivm, level, kept, loaded)
            V[level] = cell[t]
            _enter(p, bound_data, mode, branch, ub, ivm, level)
            _keep_node(ivm, level + 1, fresh, count)
            next_lo[count], next_hi[count], next_full[count] = child_lo[t], child_hi[t], child_full[t]
            next_weight[count] = child_weight[t]
            count += 1
        kept, fresh = fresh, kept
        lo, next_lo = next_lo, lo
        hi, next_hi = next_hi, hi
        full, next_full = next_full, full
        weight, next_weight = next_weight, weight
    return total


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
    """Load (or compile) the estimates' code: on a small read-only int32 instance, the array type of
    every run's ``p`` (numba compiles per type, not per size, bound or branching rule)."""
    small = np.ones((6, 2), np.int32)
    small.flags.writeable = False
    Prober(small, kept=2).samples(WorkUnit.full(6), int(small.sum()) + 1, 1)


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


def most_kept(n: int, m: int) -> int:
    """The nodes kept per depth that ``THREAD_BYTES`` holds for a tree of ``n`` jobs and ``m``
    machines (two node stores and a depth's children: ``sample_enumeration``), within
    ``KEPT_LIMITS``."""
    per_slot = 2 * 4 * (2 * n + 1 + 3 * m) + n * (4 * 4 + 1 + 2 * 8)
    return int(min(max(THREAD_BYTES // per_slot, KEPT_LIMITS[0]), KEPT_LIMITS[1]))


class Prober:
    """Sampled enumerations of one instance's tree under a bound and a branching rule, on
    ``threads`` threads at once (each with its IVM's scratch arrays and two node stores)."""

    def __init__(
        self,
        p: np.ndarray,
        *,
        bound: str = DEFAULT_BOUND,
        branch: str = DEFAULT_BRANCH,
        kept: int | None = None,
        threads: int = 1,
    ) -> None:
        """``kept``: the nodes kept per depth by every enumeration; None fits them to the time of
        each estimate (between ``KEPT_LIMITS[0]`` and ``most_kept``, from the speed of the
        enumerations before)."""
        if kept is not None and kept < 1:
            raise ValueError("kept must be >= 1")
        if threads < 1:
            raise ValueError("threads must be >= 1")
        self.problem = Problem(p, bound_code(bound), branch_code(branch))
        self.kept = kept
        n, m = self.problem.n, self.problem.m
        self.most = kept if kept is not None else most_kept(n, m)
        slots = self.most + 1
        self.scratch = [
            (IVM(self.problem).arrays, _node_store(slots, n, m), _node_store(slots, n, m)) for _ in range(threads)
        ]
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="pbbflow-enumerate") if threads > 1 else None
        self.kept_per_second: float | None = None  # of one enumeration of this tree, as last measured

    @property
    def threads(self) -> int:
        return len(self.scratch)

    def close(self) -> None:
        """Let its threads go (once no estimate is under way)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False)

    def samples(self, work: WorkUnit, ub: int, count: int, seed: int = 0) -> np.ndarray:
        """``count`` independent enumerations' estimates of the nodes left in ``work`` under ``ub``
        (zeros for no work), each keeping ``kept`` nodes per depth (``most_kept`` where none was
        given)."""
        if not work:
            return np.zeros(count, np.float64)
        rows = work_rows(work)
        kept = self.kept or self.most
        return np.array(self._round(rows, ub, kept, [seed * 1_000_003 + k for k in range(count)]), np.float64)

    def _round(self, rows: tuple[np.ndarray, np.ndarray], ub: int, kept: int, seeds: list[int]) -> list[float]:
        """One enumeration per seed of the work given as its digit rows (``work_rows``: made once per
        estimate, they cost more than an enumeration of a small tree for a work of many intervals),
        ``threads`` at a time."""
        pr = self.problem

        def run(thread: int, seed: int) -> float:
            ivm, kept_nodes, fresh = self.scratch[thread]
            return sample_enumeration(
                pr.p, pr.bound_data, pr.mode, pr.branch, int(ub), ivm, *rows, kept_nodes, fresh, kept, seed % (1 << 32)
            )

        values = []
        for first in range(0, len(seeds), self.threads):
            batch = seeds[first : first + self.threads]
            if self.pool is None:
                values += [run(0, s) for s in batch]
            else:
                values += list(self.pool.map(run, range(len(batch)), batch))
        return values

    def exact(self, work: WorkUnit, ub: int) -> int:
        """The exact node count of ``work`` under a fixed ``ub`` (a full walk: small trees only)."""
        return int(self.exact_by_depth(work, ub).sum())

    def exact_by_depth(self, work: WorkUnit, ub: int) -> np.ndarray:
        """The exact node count of ``work`` under a fixed ``ub`` at each depth 0..n (a full walk)."""
        pr = self.problem
        by_depth = np.zeros(pr.n + 1, np.int64)
        if work:
            ivm = self.scratch[0][0]
            count_nodes(pr.p, pr.bound_data, pr.mode, pr.branch, int(ub), ivm, *work_rows(work), by_depth)
        return by_depth

    def estimate(self, work: WorkUnit, ub: int, *, seconds: float = 1.0, seed: int = 0) -> NodeEstimate:
        """About ``seconds`` of enumerations of ``work`` (at least ``MIN_SAMPLES``, and one per thread),
        summarised (:func:`summarise`).  Without a fixed ``kept``, each keeps as many nodes per depth
        as the enumerations before show that it can in its share of the time; the first estimate
        times a small one first."""
        started = time.perf_counter()
        if not work:
            return NodeEstimate(0.0, 0.0, 0.0, 0, 0.0)
        rows = work_rows(work)
        count = max(MIN_SAMPLES, self.threads)
        seeds = [seed * 1_000_003 + k for k in range(count)]
        kept = self.kept
        if kept is None:
            if self.kept_per_second is None:
                self._time(rows, ub, KEPT_LIMITS[0], seed * 1_000_003 + count)
            rounds = -(-count // self.threads)
            left = max(0.0, seconds - (time.perf_counter() - started))
            kept = int(min(max(self.kept_per_second * left / rounds, KEPT_LIMITS[0]), self.most))
        values = self._time(rows, ub, kept, *seeds)
        return dataclasses.replace(summarise(np.array(values), time.perf_counter() - started), kept=kept)

    def _time(self, rows: tuple[np.ndarray, np.ndarray], ub: int, kept: int, *seeds: int) -> list[float]:
        """Enumerations at ``kept`` (one round per ``threads`` seeds), their speed remembered."""
        started = time.perf_counter()
        values = self._round(rows, ub, kept, list(seeds))
        rounds = -(-len(seeds) // self.threads)
        self.kept_per_second = kept * rounds / max(time.perf_counter() - started, 1e-6)
        return values


def summarise(values: np.ndarray, seconds: float = 0.0, resamples: int = 200, seed: int = 0) -> NodeEstimate:
    """The mean of independent estimates and a bootstrap percentile interval (2.5 %-97.5 %) of that mean."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return NodeEstimate(math.nan, math.nan, math.nan, 0, seconds)
    mean = float(values.mean())
    rng = np.random.default_rng(seed)
    means = np.array([values[rng.integers(0, values.size, values.size)].mean() for _ in range(resamples)])
    low, high = np.quantile(means, [0.025, 0.975])
    return NodeEstimate(mean, float(min(low, mean)), float(max(high, mean)), int(values.size), seconds)
