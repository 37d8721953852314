"""Makespan evaluation, best insertion, the NEH heuristic and a brute-force oracle for the PFSP.

``insert_best`` and ``take`` insert and remove jobs with Taillard's heads and tails kept between
calls (only the rows a move changed are recomputed); NEH and iterated greedy share them.

Processing times ``p[job, machine]`` are int32, C-contiguous, job-major, shape (n, m).
Completion times are accumulated in int64.
"""

from __future__ import annotations

import numba
import numpy as np

BRUTE_FORCE_MAX_N = 11


@numba.njit(cache=True, nogil=True)
def makespan_body(p, perm, work):
    """Makespan of the (possibly partial) sequence ``perm``; ``work`` is int64[m] scratch."""
    m = p.shape[1]
    for k in range(m):
        work[k] = 0
    for i in range(perm.shape[0]):
        j = perm[i]
        c = work[0] + p[j, 0]
        work[0] = c
        for k in range(1, m):
            c = max(c, work[k]) + p[j, k]
            work[k] = c
    return work[m - 1]


@numba.njit(cache=True, nogil=True)
def _insert_at(seq, length, job, position) -> None:
    """Insert ``job`` at ``position`` of ``seq[:length]``."""
    for i in range(length, position, -1):
        seq[i] = seq[i - 1]
    seq[position] = job


@numba.njit(cache=True, nogil=True)
def _remove(seq, length, position) -> int:
    """Remove and return ``seq[position]`` from ``seq[:length]``."""
    job = seq[position]
    for i in range(position, length - 1):
        seq[i] = seq[i + 1]
    return job


# Heads and tails of seq[:length], shared between consecutive insertions: ``heads[i, k + 1]`` is
# the completion on machine k of the prefix of i jobs (column 0 is zero), ``tails[j, k]`` the
# time from the start on machine k of the suffix of j jobs to its end (column m is zero).
# ``valid = [h, t]``: rows 0..h of heads and 0..t of tails hold for the current sequence.


@numba.njit(cache=True, nogil=True)
def _extend(p, seq, length, heads, tails, valid) -> None:
    """Make all rows 0..length of ``heads`` and ``tails`` valid for ``seq[:length]``."""
    m = p.shape[1]
    for i in range(valid[0], length):
        s = seq[i]
        c = np.int64(0)
        for k in range(m):
            c = max(c, heads[i, k + 1]) + p[s, k]
            heads[i + 1, k + 1] = c
    for j in range(valid[1], length):
        s = seq[length - 1 - j]
        c = np.int64(0)
        for k in range(m - 1, -1, -1):
            c = max(c, tails[j, k]) + p[s, k]
            tails[j + 1, k] = c
    valid[0] = length
    valid[1] = length


@numba.njit(cache=True, nogil=True)
def _idle(p, seq, length, job, r, heads) -> int:
    """Idle time on machines 2..m in front of ``job`` inserted at position r of ``seq[:length]``
    and in front of its successor there (tie-break between positions of equal makespan)."""
    m = p.shape[1]
    f = np.int64(0)
    g = np.int64(0)
    idle = np.int64(0)
    successor = seq[r] if r < length else -1
    for k in range(m):
        start = max(f, heads[r, k + 1])
        idle += start - heads[r, k + 1]
        f = start + p[job, k]
        if successor >= 0:
            start = max(g, f)
            idle += start - f
            g = start + p[successor, k]
    return idle  # machine 1 adds nothing: f and g start at 0


@numba.njit(cache=True, nogil=True)
def insert_best(p, seq, length, job, heads, tails, valid, idle_ties) -> int:
    """Insert ``job`` into ``seq[:length]`` at its best position (all positions in O(length m),
    Taillard 1990) and return the makespan; ties go to the earliest position, or with
    ``idle_ties`` to the one of least ``_idle`` time."""
    m = p.shape[1]
    _extend(p, seq, length, heads, tails, valid)
    best = np.iinfo(np.int64).max
    where = 0
    where_idle = np.int64(-1)  # computed at the first tie
    for r in range(length + 1):
        f = np.int64(0)
        cmax = np.int64(0)
        row = length - r
        for k in range(m):
            f = max(f, heads[r, k + 1]) + p[job, k]
            cmax = max(cmax, f + tails[row, k])
            if cmax > best:
                break
        if cmax < best:
            best = cmax
            where = r
            where_idle = -1
        elif cmax == best and idle_ties:
            if where_idle < 0:
                where_idle = _idle(p, seq, length, job, where, heads)
            idle = _idle(p, seq, length, job, r, heads)
            if idle < where_idle:
                where = r
                where_idle = idle
    _insert_at(seq, length, job, where)
    valid[0] = where
    valid[1] = length - where
    return best


@numba.njit(cache=True, nogil=True)
def take(seq, length, position, valid) -> int:
    """Remove and return ``seq[position]`` from ``seq[:length]``."""
    valid[0] = min(valid[0], position)
    valid[1] = min(valid[1], length - 1 - position)
    return _remove(seq, length, position)


@numba.njit(cache=True)
def _neh_body(p, order):
    """NEH insertion with Taillard's acceleration; jobs are inserted in ``order``."""
    n, m = p.shape
    seq = np.empty(n, np.int32)
    heads = np.zeros((n + 1, m + 1), np.int64)
    tails = np.zeros((n + 1, m + 1), np.int64)
    valid = np.zeros(2, np.int64)
    seq[0] = order[0]
    length = 1
    best = np.int64(0)  # makespan of the one-job sequence
    for k in range(m):
        best += p[order[0], k]
    for t in range(1, n):
        j = order[t]
        best = insert_best(p, seq, length, j, heads, tails, valid, False)
        length += 1
    return best, seq


@numba.njit(cache=True)
def _brute_force_body(p):
    """Exhaustive DFS over all n! sequences (no pruning); lexicographically first optimum."""
    n, m = p.shape
    c = np.zeros((n + 1, m), np.int64)  # c[d]: completion row after the first d jobs
    used = np.zeros(n, np.bool_)
    nxt = np.zeros(n + 1, np.int64)  # next job index to try at depth d
    perm = np.empty(n, np.int32)
    best_perm = np.empty(n, np.int32)
    best = np.iinfo(np.int64).max
    d = 0
    while True:
        if d == n:
            if c[n, m - 1] < best:
                best = c[n, m - 1]
                best_perm[:] = perm
            d -= 1
            used[perm[d]] = False
            continue
        j = nxt[d]
        while j < n and used[j]:
            j += 1
        if j == n:
            if d == 0:
                break
            d -= 1
            used[perm[d]] = False
            continue
        nxt[d] = j + 1
        perm[d] = j
        used[j] = True
        v = c[d, 0] + p[j, 0]
        c[d + 1, 0] = v
        for k in range(1, m):
            v = max(v, c[d, k]) + p[j, k]
            c[d + 1, k] = v
        d += 1
        nxt[d] = 0
    return best, best_perm


def _as_times(p: np.ndarray) -> np.ndarray:
    """Validate processing times and return them as C-contiguous int32."""
    p = np.asarray(p)
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 1:
        raise ValueError(f"processing times must be a non-empty 2-D (n, m) array, got shape {p.shape}")
    if p.dtype.kind not in "iu":
        raise ValueError(f"processing times must be integers, got dtype {p.dtype}")
    if p.min() < 0 or p.max() > np.iinfo(np.int32).max:
        raise ValueError("processing times must lie in [0, 2**31 - 1]")
    return np.ascontiguousarray(p, dtype=np.int32)


def makespan(p: np.ndarray, perm: np.ndarray) -> int:
    """Makespan of the full permutation ``perm`` (0-based job ids) on instance ``p``."""
    p = _as_times(p)
    n, m = p.shape
    perm = np.asarray(perm)
    if perm.ndim != 1 or perm.dtype.kind not in "iu":
        raise ValueError(f"perm must be a 1-D integer array, got shape {perm.shape}, dtype {perm.dtype}")
    if perm.shape[0] != n or not np.array_equal(np.sort(perm), np.arange(n)):
        raise ValueError(f"perm must be a permutation of range({n}), got {perm.tolist()}")
    return int(makespan_body(p, perm.astype(np.int32), np.empty(m, np.int64)))


def neh(p: np.ndarray) -> tuple[int, np.ndarray]:
    """NEH heuristic: returns (makespan, int32 permutation).

    Jobs by decreasing total time (stable: lower index first on ties), each inserted at
    the earliest best position, all positions evaluated in O(n m) (Taillard 1990).
    """
    p = _as_times(p)
    order = np.argsort(-p.sum(axis=1, dtype=np.int64), kind="stable").astype(np.int32)
    cmax, perm = _neh_body(p, order)
    return int(cmax), perm


def brute_force_optimum(p: np.ndarray) -> tuple[int, np.ndarray]:
    """Exact optimum by full enumeration (test oracle, n <= 11): (makespan, int32 permutation)."""
    p = _as_times(p)
    if p.shape[0] > BRUTE_FORCE_MAX_N:
        raise ValueError(f"brute force refuses n = {p.shape[0]} > {BRUTE_FORCE_MAX_N}")
    cmax, perm = _brute_force_body(p)
    return int(cmax), perm
