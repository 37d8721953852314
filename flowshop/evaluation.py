"""Makespan evaluation, the NEH heuristic and a brute-force oracle for the PFSP.

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
def best_insertion(p, seq, length, job, e, q, f):
    """Best position to insert ``job`` into ``seq[:length]`` and the makespan there, for all
    ``length + 1`` positions in O(length m) (Taillard 1990); the earliest best position wins.

    Scratch: ``e`` and ``q`` (int64, at least (length + 1, m + 1)) and ``f`` (int64, m + 1).
    ``e[i + 1, k + 1]`` is the completion of position i on machine k, ``q[i, k]`` the tail of
    position i from machine k to the end; row/column 0 of ``e`` and row ``length`` and column
    ``m`` of ``q`` are zero.
    """
    m = p.shape[1]
    for i in range(length):
        s = seq[i]
        for k in range(m):
            e[i + 1, k + 1] = max(e[i, k + 1], e[i + 1, k]) + p[s, k]
    for k in range(m + 1):
        q[length, k] = 0
    for i in range(length - 1, -1, -1):
        s = seq[i]
        q[i, m] = 0
        for k in range(m - 1, -1, -1):
            q[i, k] = max(q[i + 1, k], q[i, k + 1]) + p[s, k]
    best = np.iinfo(np.int64).max
    best_pos = 0
    for r in range(length + 1):
        cmax = 0
        for k in range(m):
            f[k + 1] = max(f[k], e[r, k + 1]) + p[job, k]
            cmax = max(cmax, f[k + 1] + q[r, k])
        if cmax < best:
            best = cmax
            best_pos = r
    return best, best_pos


@numba.njit(cache=True)
def _neh_body(p, order):
    """NEH insertion with Taillard's acceleration; jobs are inserted in ``order``."""
    n, m = p.shape
    seq = np.empty(n, np.int32)
    e = np.zeros((n + 1, m + 1), np.int64)
    q = np.zeros((n + 1, m + 1), np.int64)
    f = np.zeros(m + 1, np.int64)
    seq[0] = order[0]
    length = 1
    best = np.int64(0)  # makespan of the one-job sequence
    for k in range(m):
        best += p[order[0], k]
    for t in range(1, n):
        j = order[t]
        best, best_pos = best_insertion(p, seq, length, j, e, q, f)
        for i in range(length, best_pos, -1):
            seq[i] = seq[i - 1]
        seq[best_pos] = j
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
