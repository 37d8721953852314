"""The IVM (Integer-Vector-Matrix) depth-first explorer for permutation trees, in numba.

One explorer's state is a handful of fixed-size arrays (no allocation while exploring):

* ``M[n, n]``: row l holds the jobs that can be scheduled at level l; a pruned cell
  holds ``~job`` (negative);
* ``V[n]``: position at each level; read as a factoradic number (digit l has radix n-l)
  it is the DFS position in [0, n!), digits below the current level are zero;
* ``dirs[n]``: branching direction of each level (0: append to sigma1, 1: prepend to sigma2);
* ``F, B, R[n+1, m]``: front, back and remaining work of the node at each level
  (index 0 is the root), so descending one level costs O(m);
* ``end[n]``: the stop position (digits); the explorer covers [position, end).

The scalar state lives in ``scalars`` (columns below, numbered as the GPU explorer's).  A
node is *counted* by the explorer whose interval holds the node's leftmost leaf; ancestors
decoded while initialising at a position inside their subtree are not, so with a fixed tree
(UB = optimum) node counts do not depend on how [0, n!) is cut into intervals.

Performance note (measured from the LLVM IR and ``perf``): numba makes a function take
atomic references on its array arguments on every call when it creates array views
(``F[row]``), unpacks a tuple of arrays, or calls a jitted function that is not inlined
(inside a conditional expression in particular).  The per-node helpers avoid all three;
the bound bodies they call are ``inline="always"``.  This alone took ta017 from 2.3 to
3.8 M nodes/s on one core.  The per-node helpers are inlined into ``explore_steps`` too: a
call passed about 180 words of array fields on the stack (ta017: 4.5 % of the time).

LLVM's x86 backend turns a cmov fed by a load in a loop into a compare and branch; in the
LB1 children's machine loops (running completion time against the parent's front) those
branches mispredict, and with them the explorer took 20 % longer (benchmarks/cpu_phases.py,
docs/performance.md).  The conversion is a process-wide LLVM option, so :func:`compile_steps`
turns it off only around the compile of ``explore_steps`` (an :class:`IVM` calls it for its
types); every other numba function of the process, the spatial family's included, is
compiled with LLVM's default.
"""

from __future__ import annotations

import contextlib
import platform
from collections.abc import Iterator

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.core.compiler_lock import global_compiler_lock
from numba.extending import intrinsic

from .bounds import (
    head_tail_minima,
    lb1_backward_child_body,
    lb1_forward_child_body,
    lb2_body,
    lb2_tables,
)
from .choices import BACKWARD, FORWARD, LB1, LB1_LB2, LB2, MINMIN, check_codes

# The IVM's scalar state: one int64 row per IVM, numbered once for both explorers (the CPU's
# ``IVM.scalars``; a row of the GPU explorer's ``state``, gpu/flowshop/kernels.py).  The GPU's rows
# hold only the columns below DEVICE_COLUMNS (it keeps the incumbent in a device global, reads
# end = n! from the end's digits and counts the root at once), so its kernel's memory traffic is
# unchanged; the CPU's rows hold them all, INIT too, which the CPU does not use.
LEVEL = 0  # current level I
DONE = 1  # 1 when the interval is exhausted
INIT = 2  # GPU only: 1 while a new start (loaded or stolen) waits to be decoded; the CPU decodes at once
NODES = 3  # decomposed subproblems (counted, see module docstring)
LEAVES = 4  # complete schedules reached
DEVICE_COLUMNS = 5  # the GPU's rows end here: the columns below are the CPU's only
UB = 5  # incumbent makespan: children with LB >= UB are pruned
END_IS_TOTAL = 6  # 1 when the end position is n! (not representable as digits)
IMPROVED = 7  # set to 1 when a leaf improved UB (``best`` holds the schedule)
ROOT_PENDING = 8  # 1 while the root, decoded by an explorer starting at 0, waits to be counted
# Written only by ``explore_steps_timed`` (benchmarks/cpu_phases.py); the plain build leaves them at 0.
CLOCK = 9  # the cycle counter at the last phase boundary
CHILDREN = 10  # children bounded by explore_steps (the sum of the rows' lengths)
PRUNED = 11  # of those, pruned
# Cycles spent per phase of a step, one column each from CYCLES on.  Together they cover the
# whole loop of explore_steps, each ending where the next begins.
PHASES = (
    "bookkeeping",  # the end-of-interval and chunk checks at the top of a step
    "descend",  # _descend: the child's front, back and remain
    "leaf",  # a leaf's makespan and, when it improves, the schedule
    "fill_row",  # _fill_row: the child's row of jobs
    "parent_vectors",  # the parent's vectors as the bounds use them (max with the min heads/tails)
    "bound",  # LB1 (or LB2) of every child, forward and backward
    "choose",  # the MinMin (or MinBranch) direction
    "prune",  # flagging the children with LB >= UB
    "select",  # _select: the scan of M to the next unpruned cell, backtracking
)
BOOKKEEPING, DESCEND, LEAF, FILL_ROW, PARENT_VECTORS, BOUND, CHOOSE, PRUNE, SELECT = range(len(PHASES))
CYCLES = 12
N_SCALARS = CYCLES + len(PHASES)

_jit = numba.njit(cache=True, nogil=True)
_inline_jit = numba.njit(cache=True, nogil=True, inline="always")


@_jit
def _job(cell: int) -> int:
    return cell if cell >= 0 else ~cell


@_inline_jit
def _descend(p, job, direction, level, F, B, R):
    """State level+1 = state level with ``job`` added in ``direction`` (no array views)."""
    m = p.shape[1]
    t = 0
    for step in range(m):
        if direction == 0:
            k = step
            t = max(t, F[level, k]) + p[job, k]
            F[level + 1, k] = t
            B[level + 1, k] = B[level, k]
        else:
            k = m - 1 - step
            t = max(t, B[level, k]) + p[job, k]
            B[level + 1, k] = t
            F[level + 1, k] = F[level, k]
        R[level + 1, k] = R[level, k] - p[job, k]


@_inline_jit
def _fill_row(M, V, level):
    """Row level+1 = row level without the selected cell, flags cleared, order kept."""
    n = M.shape[0]
    selected = V[level]
    for v in range(selected):
        M[level + 1, v] = _job(M[level, v])
    for v in range(selected + 1, n - level):
        M[level + 1, v - 1] = _job(M[level, v])


@numba.njit(cache=True, nogil=True, inline="always")
def _child_lb2(
    p, pairs, lags, orders, front, remain, back, job, direction, child_front, child_back, child_remain, scheduled
):
    """LB2 of the child adding ``job`` in ``direction`` to the subproblem (front, remain, back)."""
    m = p.shape[1]
    t = 0
    for step in range(m):
        k = step if direction == 0 else m - 1 - step
        t = max(t, front[k] if direction == 0 else back[k]) + p[job, k]
        child_front[k] = t if direction == 0 else front[k]
        child_back[k] = t if direction == 1 else back[k]
        child_remain[k] = remain[k] - p[job, k]
    scheduled[job] = 1
    lb = lb2_body(child_front, child_remain, child_back, scheduled, p, pairs, lags, orders)
    scheduled[job] = 0
    return lb


@_inline_jit
def _select(M, V, level):
    """Advance (level, V) to the next unpruned cell in DFS order; returns (level, exhausted)."""
    n = M.shape[0]
    while True:
        if V[level] >= n - level:
            if level == 0:
                return level, True
            V[level] = 0
            level -= 1
            V[level] += 1
        elif M[level, V[level]] < 0:
            V[level] += 1
        else:
            return level, False


@_jit
def _at_or_after(V, end):
    """Lexicographic V >= end."""
    for l in range(V.shape[0]):
        if V[l] != end[l]:
            return V[l] > end[l]
    return True


@_jit
def _decode(M, V, dirs, out):
    """The complete schedule at the current leaf into ``out``."""
    n = M.shape[0]
    head = 0
    tail = n - 1
    for l in range(n):
        job = _job(M[l, V[l]])
        if dirs[l] == 0:
            out[head] = job
            head += 1
        else:
            out[tail] = job
            tail -= 1


@intrinsic
def _cycle_counter(typingctx):
    """The CPU's cycle counter (LLVM's ``readcyclecounter``: rdtsc on x86), as int64."""

    def codegen(context, builder, signature, args):
        counter = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.IntType(64), []), "llvm.readcyclecounter"
        )
        return builder.call(counter, [])

    return numba.types.int64(), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _lap(sc, phase):
    """Add the cycles since the last phase boundary to ``phase``; a new boundary starts here."""
    now = _cycle_counter()
    sc[CYCLES + phase] += now - sc[CLOCK]
    sc[CLOCK] = now


@_inline_jit
def _bound_and_prune(
    row,
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
    timed,
):
    """Bound the children in ``row`` (the node's state is index ``row``), branch, prune.

    The arrays after ``ub`` are scratch vectors (rb = remain + back, fr = front + remain),
    passed one by one (see the module's performance note); ``sc`` is the IVM's scalars.  With
    ``timed`` (a constant in every caller: the body is inlined) it laps the cycle counter.
    Direction: MinMin (the set where the smallest LB occurs fewer times) or MinBranch
    (the set with fewer children with LB < UB); ties go to the larger LB sum, then
    forward.  When every LB is >= UB the choice is immaterial (all children are pruned
    either way).
    """
    n, m = p.shape
    count = n - row
    for k in range(m):  # the parent's vectors as the bounds use them (copies, not views)
        front[k] = max(F[row, k], min_heads[k])
        back[k] = max(B[row, k], min_tails[k])
        remain[k] = R[row, k]
        rb[k] = remain[k] + back[k]
        fr[k] = front[k] + remain[k]
    uses_lb2 = int(mode != LB1)
    for j in range(n * uses_lb2):
        scheduled[j] = 1
    for c in range(count * uses_lb2):
        scheduled[M[row, c]] = 0
    if timed:
        _lap(sc, PARENT_VECTORS)
    do_forward = branch != BACKWARD
    do_backward = branch != FORWARD
    smallest = ub
    for c in range(count):
        j = M[row, c]
        lbf[c] = ub
        lbb[c] = ub
        if mode == LB2:
            if do_forward:
                lbf[c] = _child_lb2(
                    p,
                    pairs,
                    lags,
                    orders,
                    front,
                    remain,
                    back,
                    j,
                    0,
                    child_front,
                    child_back,
                    child_remain,
                    scheduled,
                )
            if do_backward:
                lbb[c] = _child_lb2(
                    p,
                    pairs,
                    lags,
                    orders,
                    front,
                    remain,
                    back,
                    j,
                    1,
                    child_front,
                    child_back,
                    child_remain,
                    scheduled,
                )
        else:
            if do_forward:
                lbf[c] = lb1_forward_child_body(front, rb, p, j)
            if do_backward:
                lbb[c] = lb1_backward_child_body(back, fr, p, j)
        smallest = min(smallest, lbf[c], lbb[c])
    if timed:
        _lap(sc, BOUND)
    key_f = 0
    key_b = 0
    sum_f = 0
    sum_b = 0
    for c in range(count):
        if branch == MINMIN:
            key_f += lbf[c] == smallest
            key_b += lbb[c] == smallest
        else:
            key_f += lbf[c] < ub
            key_b += lbb[c] < ub
        sum_f += lbf[c]
        sum_b += lbb[c]
    dynamic_backward = (key_b < key_f) | ((key_b == key_f) & (sum_b > sum_f))
    direction = int((branch == BACKWARD) | ((branch >= MINMIN) & dynamic_backward))
    dirs[row] = direction
    if timed:
        _lap(sc, CHOOSE)
    pruned = 0
    for c in range(count):
        lb = lbf[c] if direction == 0 else lbb[c]
        if mode == LB1_LB2 and lb < ub:
            lb = max(
                lb,
                _child_lb2(
                    p,
                    pairs,
                    lags,
                    orders,
                    front,
                    remain,
                    back,
                    M[row, c],
                    direction,
                    child_front,
                    child_back,
                    child_remain,
                    scheduled,
                ),
            )
        if lb >= ub:
            M[row, c] = ~M[row, c]
            pruned += 1
    if timed:
        sc[CHILDREN] += count
        sc[PRUNED] += pruned
        _lap(sc, PRUNE)


def _build(timed: bool):
    """explore_steps, or with ``timed`` its twin that counts cycles per phase.

    ``timed`` is a closure constant, the only one (numba's cache keys on the closure's contents):
    the plain build compiles without the laps and counters.
    """

    @_jit
    def explore_steps(p, bound_data, mode, branch, ivm, max_steps):
        """Decompose nodes / reach leaves until the interval ends or about ``max_steps`` are done."""
        M, V, dirs, F, B, R, end, sc, best, work, scheduled = ivm
        lbf, lbb, front, back, remain, rb, fr, child_front, child_back, child_remain = work
        min_heads, min_tails, pairs, lags, orders = bound_data
        n, m = p.shape
        if sc[DONE] == 1:
            return
        level = sc[LEVEL]
        nodes = sc[NODES] + sc[ROOT_PENDING]  # a first step is taken below (V[level] = 0 at the root)
        sc[ROOT_PENDING] = 0
        leaves = sc[LEAVES]
        bounded_end = sc[END_IS_TOTAL] == 0
        steps = 0
        if timed:
            sc[CLOCK] = _cycle_counter()
        while True:
            if bounded_end and _at_or_after(V, end):
                sc[DONE] = 1
                break
            # Stop only where the next node is not a first child (V[level] != 0): its
            # ancestors then all have a smaller leftmost leaf, so resuming at the position
            # re-decodes them without counting any node twice.  At most n more steps.
            if steps >= max_steps and V[level] != 0:
                break
            steps += 1
            if timed:
                _lap(sc, BOOKKEEPING)
            _descend(p, M[level, V[level]], dirs[level], level, F, B, R)
            if timed:
                _lap(sc, DESCEND)
            if level == n - 1:
                leaves += 1
                cost = 0
                for k in range(m):
                    cost = max(cost, F[n, k] + B[n, k])
                if cost < sc[UB]:
                    sc[UB] = cost
                    sc[IMPROVED] = 1
                    _decode(M, V, dirs, best)
                V[level] += 1
                if timed:
                    _lap(sc, LEAF)
            else:
                nodes += 1
                _fill_row(M, V, level)
                if timed:
                    _lap(sc, FILL_ROW)
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
                    sc[UB],
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
                    timed,
                )
                level += 1
            level, exhausted = _select(M, V, level)
            if timed:
                _lap(sc, SELECT)
            if exhausted:
                sc[DONE] = 1
                break
        sc[LEVEL] = level
        sc[NODES] = nodes
        sc[LEAVES] = leaves

    return explore_steps


explore_steps = _build(timed=False)
# The instrumented twin (benchmarks/cpu_phases.py): the same steps, adding cycles per phase from
# sc[CYCLES] on and the children bounded and pruned to sc[CHILDREN] and sc[PRUNED].
explore_steps_timed = _build(timed=True)


@contextlib.contextmanager
def _cmov_kept() -> Iterator[None]:
    """LLVM's x86 cmov-to-branch conversion off for the numba compiles inside, back to LLVM's
    default (on) after.  The option is the process's: numba's compiler lock, held throughout,
    keeps other threads' compiles out meanwhile."""
    if platform.machine().lower() not in ("x86_64", "amd64"):  # an x86 backend option
        yield
        return
    with global_compiler_lock:
        llvm.set_option("", "--x86-cmov-converter=false")
        try:
            yield
        finally:
            llvm.set_option("", "--x86-cmov-converter=true")


def compile_steps(steps: numba.core.dispatcher.Dispatcher, problem: Problem, arrays: tuple) -> None:
    """Compile (or load from numba's cache) ``steps``, ``explore_steps`` or its timed twin, for
    ``problem`` and an IVM's ``arrays``, with cmov kept (module docstring); its first call would
    compile it with LLVM's default.  Machine code is made here, never later: numba's cache holds it."""
    args = (problem.p, problem.bound_data, problem.mode, problem.branch, arrays, 0)
    signature = tuple(steps.typeof_pyval(a) for a in args)
    if signature not in steps.overloads:
        with _cmov_kept():
            steps.compile(signature)


@_jit
def set_root(p, bound_data, mode, branch, ub, ivm):
    """The root's state in row 0 of the IVM's arrays (V at 0), its children bounded and pruned under ``ub``."""
    M, V, dirs, F, B, R, end, sc, best, work, scheduled = ivm
    lbf, lbb, front, back, remain, rb, fr, child_front, child_back, child_remain = work
    min_heads, min_tails, pairs, lags, orders = bound_data
    n, m = p.shape
    for l in range(n):
        V[l] = 0
        M[0, l] = l
    for k in range(m):
        F[0, k] = 0
        B[0, k] = 0
        total = 0
        for j in range(n):
            total += p[j, k]
        R[0, k] = total
    _bound_and_prune(
        0,
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
def init_at(p, bound_data, mode, branch, ivm, start):
    """Position the explorer at the factoradic ``start``; ancestors are decoded, not counted."""
    M, V, dirs, F, B, R, end, sc, best, work, scheduled = ivm
    lbf, lbb, front, back, remain, rb, fr, child_front, child_back, child_remain = work
    min_heads, min_tails, pairs, lags, orders = bound_data
    n, m = p.shape
    set_root(p, bound_data, mode, branch, sc[UB], ivm)
    last_nonzero = -1
    for l in range(n):
        if start[l] != 0:
            last_nonzero = l
    # The root's leftmost leaf is 0: an explorer starting there owns the root.  While it stands
    # at 0 it counts the root at its first step: stopped before that step, it leaves position 0,
    # and with it the root, to whoever resumes there.
    sc[ROOT_PENDING] = int(last_nonzero == -1)
    sc[DONE] = 0
    level = 0
    for l in range(n):
        level = l
        V[l] = start[l]
        if M[l, V[l]] < 0:
            # the next unpruned cell may lie at or past the end: the interval is then
            # exhausted, as explore_steps would find before its first step
            level, exhausted = _select(M, V, l)
            if exhausted or (sc[END_IS_TOTAL] == 0 and _at_or_after(V, end)):
                sc[DONE] = 1
            break
        if l >= last_nonzero:
            break
        _descend(p, M[l, V[l]], dirs[l], l, F, B, R)
        _fill_row(M, V, l)
        _bound_and_prune(
            l + 1,
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
            sc[UB],
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
    sc[LEVEL] = level
    if sc[DONE] == 1 or V[level] != 0:  # pruned cells moved it off 0, or nothing is left: count now
        sc[NODES] += sc[ROOT_PENDING]
        sc[ROOT_PENDING] = 0


class Problem:
    """Instance data shared (read-only) by all explorers: times, bound tables, options."""

    def __init__(self, p: np.ndarray, mode: int, branch: int) -> None:
        check_codes(mode, branch)
        self.p = np.ascontiguousarray(p, dtype=np.int32)
        self.n, self.m = self.p.shape
        self.mode = mode
        self.branch = branch
        if mode == LB1:  # LB2 tables are unused: keep them tiny
            lb2 = (np.zeros((0, 2), np.int32), np.zeros((0, self.n), np.int32), np.zeros((0, self.n), np.int32))
        else:
            lb2 = lb2_tables(self.p)
        self.bound_data = (*head_tail_minima(self.p), *lb2)


class IVM:
    """One explorer's arrays, with the Python-side view of its interval."""

    def __init__(self, problem: Problem) -> None:
        n, m = problem.n, problem.m
        self.problem = problem
        self.M = np.zeros((n, n), np.int32)
        self.V = np.zeros(n, np.int32)
        self.dirs = np.zeros(n, np.int8)
        self.F = np.zeros((n + 1, m), np.int32)
        self.B = np.zeros((n + 1, m), np.int32)
        self.R = np.zeros((n + 1, m), np.int32)
        self.end = np.zeros(n, np.int32)
        self.scalars = np.zeros(N_SCALARS, np.int64)
        self.scalars[DONE] = 1
        self.best = np.zeros(n, np.int32)
        work = [np.zeros(n, np.int32), np.zeros(n, np.int32)] + [np.zeros(m, np.int32) for _ in range(8)]
        self.arrays = (
            self.M,
            self.V,
            self.dirs,
            self.F,
            self.B,
            self.R,
            self.end,
            self.scalars,
            self.best,
            tuple(work),
            np.zeros(n, np.int8),
        )
        compile_steps(explore_steps, problem, self.arrays)

    def start(self, start_digits: np.ndarray, end_digits: np.ndarray | None, ub: int) -> None:
        """Begin the interval [start, end); ``end_digits`` None means end = n!."""
        s = self.scalars
        s[UB] = ub
        s[IMPROVED] = 0
        if end_digits is None:
            s[END_IS_TOTAL] = 1
        else:
            s[END_IS_TOTAL] = 0
            self.end[:] = end_digits
        pr = self.problem
        init_at(pr.p, pr.bound_data, pr.mode, pr.branch, self.arrays, np.ascontiguousarray(start_digits, np.int32))

    def set_end(self, end_digits: np.ndarray) -> None:
        """Shrink the interval to end at ``end_digits`` (the explorer must not be running)."""
        self.end[:] = end_digits
        self.scalars[END_IS_TOTAL] = 0

    def run(self, max_steps: int) -> None:
        """Explore up to ``max_steps`` nodes and leaves (releases the GIL)."""
        pr = self.problem
        explore_steps(pr.p, pr.bound_data, pr.mode, pr.branch, self.arrays, max_steps)

    def steps_done(self) -> int:
        """Nodes decomposed plus leaves reached so far (all intervals)."""
        return int(self.scalars[NODES] + self.scalars[LEAVES])

    @property
    def done(self) -> bool:
        return bool(self.scalars[DONE])
