"""PBB@GPU kernels in numba-cuda: one warp per IVM, many decompositions per launch.

The explore kernel (``explore_kernel(n, m)``: one compiled per machine count m and chunk of 32
jobs) runs every IVM for up to ``max_steps`` nodes and leaves, fusing the paper's
selection and bounding kernels: a warp selects the next node (a vote over 32 cells at a time,
which doubled the 50-job rate: benchmarks/results/gpu_warp_select_h200_2026-12-02.json),
descends (max-plus prefix scan over the machines with shuffles), fills the child row, bounds
all children at once (one child per lane, LB1 in O(m) with the CPU's own ``njit`` bodies),
reduces for the MinMin direction and prunes, without leaving the kernel.  The IVM's digit
vector ``V`` and branching directions live in local arrays spread over the lanes (lane
``l % 32`` holds level ``l``; one entry per lane for n <= 32); the matrix ``M`` and the
front/back/remaining rows live in global memory, the instance in a block's shared memory where it
takes at most ``STAGED_BYTES`` (ta056: 586 -> 693 M nodes/s on an H200,
benchmarks/results/gpu_staged_instance_h200_2026-12-05.json).

Array indices in the hot paths are cast to uint32: numba wraps a signed index around when it
is negative (three 64-bit instructions per dimension of every access), an unsigned one it takes
as is.  That took ta021-ta030 from 10.0-10.2 s to 7.9 s and ta056 from 398-413 to 507-519 M
nodes/s on an H200 (benchmarks/results/gpu_unsigned_indices_h200_2026-12-02.json).  The loops
over a row's chunks of WARP cells run to ``row_chunks``, a constant 1 for n <= 32, so they
compile to one pass: ta021-ta030 6.4-6.7 s instead of 7.9 s
(benchmarks/results/gpu_constant_chunks_h200_2026-12-02.json).

A kernel is compiled per machine count m (a closure constant), so the O(m) bounding loops
unroll with immediate shared-memory offsets, and the arithmetic is int32 throughout (numba
widens int32 sums to int64, which a GPU emulates with several instructions).  Together this
took ta021 from 156 to 405-426 M nodes/s on an H200 (benchmarks/results/gpu_explorer_h200_*.json).

The semantics are exactly the CPU explorer's (``flowshop/ivm.py``): same bounds, same
tie-breaking, nodes counted by the owner of their leftmost leaf and a budget stop only
where ``V[level] != 0``, so with UB = optimum node counts equal the CPU's.

Work stealing (paper section 3.3) is three small kernels between explore launches:
``classify`` lists idle IVMs and finds the largest remaining interval size, ``list_victims``
lists busy IVMs with an interval of about that size, and ``steal`` pairs the i-th idle IVM
with the i-th victim (unique pairs, no conflicts): the thief takes ``[mid, end)`` with
``mid = (position + end) // 2`` and the victim keeps ``[position, mid)``.
"""

from __future__ import annotations

import functools

from numba import cuda, int32, int64, uint32, uint64

from ...flowshop import bounds
from ...flowshop.choices import BACKWARD, FORWARD, MINMIN
from ...flowshop.ivm import DONE, INIT, LEAVES, LEVEL, NODES
from ...flowshop.packed import limbs
from ..warp import (
    SIMULATED,
    WARP,
    WARPS_PER_BLOCK,
    first_lane,
    scan_max,
    scan_sum,
    shared_body,
    shfl,
    sync_lanes,
    warp_max,
    warp_min,
    warp_sum,
    warp_sum64,
)
from . import factoradic

lb1_forward_child_body = shared_body(bounds.lb1_forward_child_body)
lb1_backward_child_body = shared_body(bounds.lb1_backward_child_body)
fd_subtract = shared_body(factoradic.subtract)
fd_add = shared_body(factoradic.add)
fd_halve = shared_body(factoradic.halve)
fd_compare = shared_body(factoradic.compare)
fd_leading_digit = shared_body(factoradic.leading_digit)
fd_to_limbs = shared_body(factoradic.to_limbs)

# ``state`` (int64, one row per IVM): the IVM state's columns below DEVICE_COLUMNS (flowshop/ivm.py)
# ``counters`` (int64): totals over the IVMs, reset by the host
C_NODES, C_LEAVES, C_ACTIVE, C_IDLE, C_VICTIMS, C_MIN_LEADING = 0, 1, 2, 3, 4, 5
N_COUNTERS = 6

MAX_CHUNKS = 16  # levels and children per lane: n <= 512
STAGED_BYTES = 16 * 1024  # the largest instance copied to a block's shared memory (int32, rows padded)
MAX_WORDS = 2 * limbs(MAX_CHUNKS * WARP)  # 32-bit words of the largest bound
MAX_MACHINES = 255  # static shared memory of a block: (4 * 4 * m + 32 * (m | 1)) int32 <= 48 KB
# 64 registers per thread (the n <= 32 kernel uses 95-110 without a limit: benchmarks/kernel_resources.py).
# ta021 + ta026 + ta027 on an H200, seconds in two runs (benchmarks/results/
# gpu_kernel_sweep_h200_2026-11-30.json): 64: 2.63 / 2.73, 80: 2.76 / 2.82, 96: 2.82 / 3.00
EXPLORE_OPTIONS = {} if SIMULATED else {"max_registers": 64}
NEG = -(1 << 30)


@cuda.jit(device=True)
def get_digit(loc, level):
    """Digit ``level`` of a vector spread over the lanes (all lanes get it)."""
    return shfl(loc[uint32(level) // uint32(WARP)], uint32(level) % uint32(WARP))


@cuda.jit(device=True)
def set_digit(loc, level, value, lane):
    if lane == uint32(level) % uint32(WARP):
        loc[uint32(level) // uint32(WARP)] = value


@cuda.jit(device=True)
def descend(p, F, B, R, w, level, job, direction, m, lane):
    """Row ``level + 1`` of F, B, R = row ``level`` with ``job`` added in ``direction``.

    Completion times are a max-plus prefix: C_k = P_k + max_{i<=k} (F_i - P_{i-1}) with P
    the prefix sums of the job's times, so two warp scans replace the O(m) chain.
    """
    here = uint32(level)  # unsigned indices: no wraparound code (see the module docstring)
    below = uint32(level + 1)
    carry_sum = int32(0)
    carry_max = int32(NEG)
    for base in range(0, m, WARP):
        step = base + lane
        active = step < m
        k = uint32((step if direction == 0 else m - 1 - step) if active else 0)
        pk = int32(0)
        edge = int32(0)
        if active:
            pk = p[uint32(job), k]
            edge = F[w, here, k] if direction == 0 else B[w, here, k]
        total = int32(scan_sum(pk, lane) + carry_sum)
        x = int32(edge - (total - pk)) if active else int32(NEG)
        best = max(scan_max(x, lane), carry_max)
        if active:
            if direction == 0:
                F[w, below, k] = total + best
                B[w, below, k] = B[w, here, k]
            else:
                B[w, below, k] = total + best
                F[w, below, k] = F[w, here, k]
            R[w, below, k] = R[w, here, k] - pk
        carry_sum = shfl(total, WARP - 1)
        carry_max = shfl(best, WARP - 1)
    sync_lanes()


@cuda.jit(device=True)
def leaf_cost(F, B, w, n, m, lane):
    cost = int32(0)
    for base in range(0, m, WARP):
        k = base + lane
        value = F[w, n, k] + B[w, n, k] if k < m else 0
        cost = max(cost, warp_max(value))
    return cost


@cuda.jit(device=True)
def fill_row(M, w, level, selected, n, chunks, lane):
    """Row level+1 = row level without the selected cell, pruning flags cleared, order kept.
    ``chunks``: the most chunks of WARP cells in a row (see ``row_chunks``)."""
    count = n - level
    here = uint32(level)
    below = uint32(level + 1)
    for chunk in range(chunks):  # a constant trip count: unrolled, one pass when chunks == 1
        if chunk * WARP >= count:
            break
        v = chunk * WARP + lane
        if v < count and v != selected:
            cell = M[w, here, uint32(v)]
            M[w, below, uint32(v - (1 if v > selected else 0))] = cell if cell >= 0 else ~cell
    sync_lanes()


@cuda.jit(device=True)
def bound_and_prune(p, heads, tails, M, F, B, R, S, w, row, n, ub, branch, pack_sums, lbf, lbb, chunks, lane):
    """Bound the children of the node at ``row``, choose the direction, prune; returns it.
    ``S``: the warp's (4, m) shared rows; ``lbf``, ``lbb``: the lane's local arrays for its
    children's forward and backward bounds; ``chunks``: the most chunks of WARP cells in a row.

    ``p`` is row-major: for n <= 32 a shared-memory copy with rows of odd length (lanes reading
    one machine of different jobs hit distinct banks), else the global array, which the L1 cache
    holds (reading it job-fast was measured on an H200 with the earlier kernel: no gain).
    """
    m = S.shape[1]
    r = uint32(row)
    for base in range(0, m, WARP):
        k = uint32(base + lane)
        if k < m:
            front = max(F[w, r, k], heads[k])
            back = max(B[w, r, k], tails[k])
            remain = R[w, r, k]
            S[0, k] = front
            S[1, k] = back
            S[2, k] = remain + back
            S[3, k] = front + remain
    sync_lanes()
    count = n - row
    do_forward = branch != BACKWARD
    do_backward = branch != FORWARD
    smallest = ub
    for chunk in range(chunks):
        if chunk * WARP >= count:
            break
        c = chunk * WARP + lane
        lf = ub
        lb = ub
        if c < count:
            job = uint32(M[w, r, uint32(c)])
            if do_forward:
                lf = lb1_forward_child_body(S[0], S[2], p, job)
            if do_backward:
                lb = lb1_backward_child_body(S[1], S[3], p, job)
            smallest = min(smallest, lf, lb)
        lbf[uint32(chunk)] = lf
        lbb[uint32(chunk)] = lb
    smallest = warp_min(smallest)
    keys = int32(0)  # forward key in the low 16 bits, backward key above (keys <= n <= 512)
    for chunk in range(chunks):
        if chunk * WARP >= count:
            break
        if chunk * WARP + lane < count:
            lf = lbf[uint32(chunk)]
            lb = lbb[uint32(chunk)]
            if branch == MINMIN:
                keys = int32(keys + int32(lf == smallest) + (int32(lb == smallest) << 16))
            else:
                keys = int32(keys + int32(lf < ub) + (int32(lb < ub) << 16))
    keys = warp_sum(keys)
    key_f = keys & 0xFFFF
    key_b = keys >> 16
    dynamic_backward = key_b < key_f
    if key_b == key_f:  # the same on every lane: ties go to the larger sum of bounds
        sum_f = int64(0)
        sum_b = int64(0)
        for chunk in range(chunks):
            if chunk * WARP >= count:
                break
            if chunk * WARP + lane < count:
                sum_f += lbf[uint32(chunk)]
                sum_b += lbb[uint32(chunk)]
        if pack_sums:  # both sums fit in 31 bits: one reduction instead of two
            sums = warp_sum64(sum_f + (sum_b << 32))
            sum_f = sums & 0xFFFFFFFF
            sum_b = sums >> 32
        else:
            sum_f = warp_sum64(sum_f)
            sum_b = warp_sum64(sum_b)
        dynamic_backward = sum_b > sum_f
    direction = 1 if branch == BACKWARD or (branch >= MINMIN and dynamic_backward) else 0
    for chunk in range(chunks):
        if chunk * WARP >= count:
            break
        c = chunk * WARP + lane
        if c < count:
            lb = lbf[uint32(chunk)] if direction == 0 else lbb[uint32(chunk)]
            if lb >= ub:
                M[w, r, uint32(c)] = ~M[w, r, uint32(c)]
    sync_lanes()
    return direction


@cuda.jit(device=True)
def next_open_cell(M, w, level, v, count, chunks, lane):
    """The first unpruned cell of row ``level`` at or after ``v``; ``count`` when there is none.
    The warp reads a row's cells ``WARP`` at a time instead of one after the other; a row spans
    at most ``chunks`` chunks of them."""
    for chunk in range(chunks):
        base = v + chunk * WARP
        if base >= count:
            break
        c = base + lane
        first = first_lane(c < count and M[w, uint32(level), uint32(c)] >= 0)
        if first < WARP:
            return base + first
    return count


@cuda.jit(device=True)
def select(M, vloc, w, level, n, chunks, lane):
    """Advance to the next unpruned cell in DFS order; returns (level, exhausted)."""
    while True:
        count = n - level
        v = next_open_cell(M, w, level, get_digit(vloc, level), count, chunks, lane)
        if v < count:
            set_digit(vloc, level, v, lane)
            return level, False
        if level == 0:
            set_digit(vloc, level, v, lane)
            return level, True
        set_digit(vloc, level, 0, lane)
        level -= 1
        set_digit(vloc, level, get_digit(vloc, level) + 1, lane)


@cuda.jit(device=True)
def first_difference(vloc, end, w, n, chunks, lane):
    """The first level where the position (V) is below the end; -1 when V >= end; -2 when
    the end is n! (never reached).

    Below the end, V stays below it while only deeper levels change, so the explore loop
    checks again only when it is back at or above that level (digits of all lanes at once).
    """
    if end[w, 0] != 0:
        return -2
    for chunk in range(chunks):
        if chunk * WARP >= n:
            break
        level = chunk * WARP + lane
        differs = level < n and vloc[uint32(chunk)] != end[w, uint32(1 + level)]
        first = warp_min(level if differs else n)
        if first < n:
            return first if get_digit(vloc, first) < end[w, uint32(1 + first)] else -1
    return -1


@cuda.jit(device=True)
def read_ub(ub_global, lane):
    """The shared incumbent, read once and broadcast (lanes must agree on it)."""
    value = int32(0)
    if lane == 0:
        value = ub_global[0]
    return shfl(value, 0)


@cuda.jit(device=True)
def record_leaf(M, vloc, dloc, best, best_cost, ub_global, w, n, cost, lane):
    """Publish an improving schedule: global incumbent and this IVM's best."""
    head = 0
    tail = n - 1
    for level in range(n):
        cell = M[w, level, get_digit(vloc, level)]
        job = cell if cell >= 0 else ~cell
        if get_digit(dloc, level) == 0:
            if lane == 0:
                best[w, head] = job
            head += 1
        else:
            if lane == 0:
                best[w, tail] = job
            tail -= 1
    if lane == 0:
        best_cost[w] = cost
        cuda.atomic.min(ub_global, 0, cost)


@cuda.jit(device=True)
def init_at(p, heads, tails, M, F, B, R, S, start, vloc, dloc, lbf, lbb, w, n, ub, branch, pack_sums, chunks, lane):
    """Decode the path to the position ``start[w]``; returns (level, done, nodes owned)."""
    m = S.shape[1]
    for chunk in range(vloc.shape[0]):
        vloc[chunk] = 0
        dloc[chunk] = 0
    for base in range(0, n, WARP):
        if base + lane < n:
            M[w, 0, base + lane] = base + lane
    for base in range(0, m, WARP):
        k = base + lane
        if k < m:
            total = int32(0)
            for j in range(n):
                total = int32(total + p[j, k])
            F[w, 0, k] = 0
            B[w, 0, k] = 0
            R[w, 0, k] = total
    sync_lanes()
    direction = bound_and_prune(p, heads, tails, M, F, B, R, S, w, 0, n, ub, branch, pack_sums, lbf, lbb, chunks, lane)
    set_digit(dloc, 0, direction, lane)
    last_nonzero = -1
    for base in range(0, n, WARP):
        level = base + lane
        last_nonzero = max(last_nonzero, warp_max(level if level < n and start[w, 1 + level] != 0 else -1))
    owned = 1 if last_nonzero == -1 else 0  # the root's leftmost leaf is 0
    done = False
    level = 0
    for l in range(n):
        level = l
        v = start[w, 1 + l]
        set_digit(vloc, l, v, lane)
        if M[w, l, v] < 0:
            level, done = select(M, vloc, w, l, n, chunks, lane)
            break
        if l >= last_nonzero:
            break
        descend(p, F, B, R, w, l, M[w, l, v], get_digit(dloc, l), m, lane)
        fill_row(M, w, l, v, n, chunks, lane)
        direction = bound_and_prune(
            p, heads, tails, M, F, B, R, S, w, l + 1, n, ub, branch, pack_sums, lbf, lbb, chunks, lane
        )
        set_digit(dloc, l + 1, direction, lane)
    return level, done, owned


@functools.cache
def _explore_kernel(chunks: int, machines: int, stage: bool):
    """The explore kernel for n <= ``chunks`` * WARP jobs and ``machines`` machines, with the
    instance copied to shared memory when ``stage``.

    Local arrays of ``chunks`` entries per lane, and loops over a row's chunks that run to the
    constant ``chunks``, so they unroll: one entry (n <= 32) instead of 16 took ta021-ta030 from
    36.7 s to 30.0 s on an H200 (benchmarks/gpu_explorer.py, MinMin).  ``machines`` is a
    compile-time constant, so the bounding loops over the machines unroll and their shared-memory
    offsets are immediate.
    """

    # The instance in shared memory (rows padded to an odd length): for n <= 32, 2.63 / 2.73 s
    # against 2.69 / 2.88 s from global memory at 64 registers; 110 registers at ptxas'
    # -maxrregcount 255 instead of 138.
    staged_rows = chunks * WARP if stage else 1
    staged_stride = machines | 1  # odd: lanes reading one machine of different jobs hit distinct banks

    @cuda.jit(cache=True, **EXPLORE_OPTIONS)
    def explore(
        p,
        heads,
        tails,
        M,
        V,
        dirs,
        F,
        B,
        R,
        end,
        start,
        state,
        best,
        best_cost,
        ub_global,
        counters,
        max_steps,
        branch,
        pack_sums,
    ):
        """Every IVM (one warp each) explores up to about ``max_steps`` nodes and leaves.

        Shared memory: 4 rows of m int32 per warp (the parent's front, back, remain + back and
        front + remain while its children are bounded).  Blocks of ``WARPS_PER_BLOCK`` warps.
        For n <= 32 the block also copies the instance there, rows padded to an odd length.
        """
        n = M.shape[1]
        m = machines
        lane = cuda.threadIdx.x % WARP
        w = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) // WARP
        staged = cuda.shared.array((staged_rows, staged_stride), int32)
        if stage:
            for i in range(cuda.threadIdx.x, n * m, cuda.blockDim.x):
                staged[i // m, i % m] = p[i // m, i % m]
            cuda.syncthreads()
            p = staged
        if w >= state.shape[0]:
            return
        S = cuda.shared.array((WARPS_PER_BLOCK, 4, machines), int32)[cuda.threadIdx.x // WARP]
        if state[w, DONE] != 0 and state[w, INIT] == 0:
            return
        vloc = cuda.local.array(chunks, int32)  # V and the directions, level l on lane l % WARP
        dloc = cuda.local.array(chunks, int32)
        lbf = cuda.local.array(chunks, int32)  # children's bounds, child c on lane c % WARP
        lbb = cuda.local.array(chunks, int32)
        row_chunks = chunks  # the most chunks of WARP cells in a row: a constant, so loops over them unroll
        ub = read_ub(ub_global, lane)
        nodes = int64(0)
        leaves = int64(0)
        if state[w, INIT] != 0:
            level, done, owned = init_at(
                p,
                heads,
                tails,
                M,
                F,
                B,
                R,
                S,
                start,
                vloc,
                dloc,
                lbf,
                lbb,
                w,
                n,
                ub,
                branch,
                pack_sums,
                row_chunks,
                lane,
            )
            nodes += owned
        else:
            for chunk in range(chunks):
                level = chunk * WARP + lane
                vloc[chunk] = V[w, level] if level < n else 0
                dloc[chunk] = dirs[w, level] if level < n else 0
            level = state[w, LEVEL]
            done = False
        steps = 0
        horizon = n  # V is below the end while V[:horizon + 1] is as when last checked; n: check now
        while not done:
            if level <= horizon:
                horizon = first_difference(vloc, end, w, n, row_chunks, lane)
                if horizon == -1:  # at or after the end
                    done = True
                    break
            v = get_digit(vloc, level)
            # stop only where the next node is not a first child (see flowshop/ivm.py)
            if steps >= max_steps and v != 0:
                break
            steps += 1
            descend(p, F, B, R, w, level, M[w, uint32(level), uint32(v)], get_digit(dloc, level), m, lane)
            if level == n - 1:
                leaves += 1
                cost = leaf_cost(F, B, w, n, m, lane)
                if cost < ub:
                    ub = min(ub, read_ub(ub_global, lane))
                    if cost < ub:
                        record_leaf(M, vloc, dloc, best, best_cost, ub_global, w, n, cost, lane)
                        ub = cost
                set_digit(vloc, level, v + 1, lane)
            else:
                nodes += 1
                fill_row(M, w, level, v, n, row_chunks, lane)
                ub = min(ub, read_ub(ub_global, lane))
                direction = bound_and_prune(
                    p, heads, tails, M, F, B, R, S, w, level + 1, n, ub, branch, pack_sums, lbf, lbb, row_chunks, lane
                )
                set_digit(dloc, level + 1, direction, lane)
                level += 1
            level, done = select(M, vloc, w, level, n, row_chunks, lane)
        for chunk in range(chunks):
            l = chunk * WARP + lane
            if l < n:
                V[w, l] = vloc[chunk]
                dirs[w, l] = dloc[chunk]
        if lane == 0:
            state[w, LEVEL] = level
            state[w, DONE] = 1 if done else 0
            state[w, INIT] = 0
            state[w, NODES] += nodes
            state[w, LEAVES] += leaves
            cuda.atomic.add(counters, C_NODES, nodes)
            cuda.atomic.add(counters, C_LEAVES, leaves)
            if not done:
                cuda.atomic.add(counters, C_ACTIVE, 1)

    return explore


# The explore kernel's argument types (gpu/flowshop/explorer.py's arrays), for compiling it without a GPU
# (gpu/offline_ptx.py): p, heads, tails, M, V, dirs, F, B, R, end, start, state, best, best_cost,
# ub, counters, max_steps, branch, pack_sums.
EXPLORE_SIGNATURE = (
    "(int32[:, ::1], int32[::1], int32[::1], int16[:, :, ::1], int32[:, ::1], int32[:, ::1], "
    "int32[:, :, ::1], int32[:, :, ::1], int32[:, :, ::1], int32[:, ::1], int32[:, ::1], "
    "int64[:, ::1], int32[:, ::1], int32[::1], int32[::1], int64[::1], int64, int64, boolean)"
)


def explore_kernel(n: int, m: int):
    """The explore kernel for ``n`` jobs on ``m`` machines (compiled once per chunk count and m):
    the instance is staged in shared memory when it takes at most STAGED_BYTES there."""
    chunks = -(-n // WARP)
    return _explore_kernel(chunks, m, chunks * WARP * (m | 1) * 4 <= STAGED_BYTES)


# ---------------------------------------------------------------------- work stealing, one thread per IVM


@cuda.jit(device=True)
def position_of(V, w, out):
    """The IVM's position as an (n+1)-digit vector."""
    out[0] = 0
    for level in range(V.shape[1]):
        out[1 + level] = V[w, level]


@cuda.jit(device=True)
def size_leading_digit(V, end, w):
    """Leading digit of the size of the IVM's interval, end - position: smaller is larger."""
    n = V.shape[1]
    position = cuda.local.array(513, int32)
    size = cuda.local.array(513, int32)
    position_of(V, w, position)
    fd_subtract(end[w], position[: n + 1], size[: n + 1])
    return fd_leading_digit(size[: n + 1])


@cuda.jit(cache=True)
def classify(V, end, state, idle, counters):
    """List idle IVMs; find the largest remaining interval (smallest leading digit of end - position)."""
    w = cuda.grid(1)
    if w >= state.shape[0]:
        return
    if state[w, DONE] != 0:
        idle[cuda.atomic.add(counters, C_IDLE, 1)] = w
        return
    cuda.atomic.min(counters, C_MIN_LEADING, size_leading_digit(V, end, w))


@cuda.jit(cache=True)
def list_victims(V, end, state, victims, counters, slack):
    """Busy IVMs whose interval is within ``slack`` leading digits of the largest, and at least 2."""
    w = cuda.grid(1)
    if w >= state.shape[0] or state[w, DONE] != 0:
        return
    leading = size_leading_digit(V, end, w)
    big_enough = leading <= V.shape[1] - 2  # the last two digits are worth 0 and 1: size >= 2
    if big_enough and leading <= counters[C_MIN_LEADING] + slack:
        victims[cuda.atomic.add(counters, C_VICTIMS, 1)] = w


@cuda.jit(cache=True)
def steal(V, end, start, state, idle, victims, counters):
    """The i-th idle IVM takes the right half of the i-th victim's interval."""
    i = cuda.grid(1)
    if i >= min(counters[C_IDLE], counters[C_VICTIMS]):
        return
    thief = idle[i]
    victim = victims[i]
    n = V.shape[1]
    position = cuda.local.array(513, int32)
    scratch = cuda.local.array(513, int32)
    mid = cuda.local.array(513, int32)
    position_of(V, victim, position)
    fd_add(position[: n + 1], end[victim], scratch[: n + 1])
    fd_halve(scratch[: n + 1], mid[: n + 1])
    if fd_compare(mid[: n + 1], position[: n + 1]) <= 0:
        return
    for d in range(n + 1):
        start[thief, d] = mid[d]
        end[thief, d] = end[victim, d]
        end[victim, d] = mid[d]
    state[thief, DONE] = 0
    state[thief, INIT] = 1


@cuda.jit(cache=True)
def pack_work(V, start, end, state, bounds):
    """Each busy IVM's interval ``[position, end)`` as uint64 limbs, most significant first, in
    ``bounds[w, 0]`` and ``bounds[w, 1]`` (a stolen interval not decoded yet starts at its start);
    an idle IVM's row is left as it was.  The host reads 8 limbs an IVM at n = 50 instead of 153 digits."""
    w = cuda.grid(1)
    if w >= state.shape[0] or state[w, DONE] != 0:
        return
    n = V.shape[1]
    position = cuda.local.array(513, int32)
    words = cuda.local.array(MAX_WORDS, uint64)
    if state[w, INIT] != 0:
        for d in range(n + 1):
            position[d] = start[w, d]
    else:
        position_of(V, w, position)
    width = bounds.shape[2]
    fd_to_limbs(position[: n + 1], words[: 2 * width], bounds[w, 0])
    fd_to_limbs(end[w], words[: 2 * width], bounds[w, 1])
