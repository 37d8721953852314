"""Lower bounds for PFSP subproblems (sigma1, sigma2) as allocation-free numba bodies.

A subproblem is summarised by three length-m vectors:

* ``front[k]``: earliest start of the unscheduled jobs on machine k: the completion
  time of the prefix sigma1, and at least the smallest head ``min_j sum_{l<k} p[j, l]``
  (Potts 1980; this is all there is when sigma1 is empty);
* ``back[k]``: minimum time from the start of the suffix sigma2 on machine k to the end
  (sigma2 scheduled on the reversed problem), and at least the smallest tail;
* ``remain[k]``: total processing time of the unscheduled jobs on machine k.

LB1 (one-machine bound, Lomnicki / Ignall-Schrage, bidirectional per Potts 1980) is
``max_k front[k] + remain[k] + back[k]``; children are bounded from the parent's vectors
in O(m) each.  LB2 (two-machine bound, Lageweg et al. 1978) solves, for every machine
pair (k, l), the two-machine problem with time lags (the machines between k and l) by
Johnson's rule; the job orders are sorted once per instance.

The ``*_body`` functions only read and write caller-provided arrays, so the CPU explorer
and a CUDA kernel can share them.  Developers: numba's on-disk cache of a caller (e.g.
``flowshop/ivm.py``) is keyed on the caller's own file, so after editing a body here delete
the ``*.nbi``/``*.nbc`` files under ``__pycache__`` or the callers keep the old inlined code.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import int32

from .choices import DEFAULT_BOUND, LB1, bound_code

_jit = numba.njit(cache=True, nogil=True)
# Inlined into their callers at numba-IR level: a call that passes arrays to a compiled
# function makes the CPU caller take atomic references on every array argument.
_inline_jit = numba.njit(cache=True, nogil=True, inline="always")


@_jit
def add_front_body(front: np.ndarray, p: np.ndarray, job: int, out: np.ndarray) -> None:
    """out = completion times after appending ``job`` to a prefix with completions ``front``."""
    t = 0
    for k in range(front.shape[0]):
        t = max(t, front[k]) + p[job, k]
        out[k] = t


@_jit
def add_back_body(back: np.ndarray, p: np.ndarray, job: int, out: np.ndarray) -> None:
    """out = tails after prepending ``job`` to a suffix with tails ``back``."""
    t = 0
    for k in range(back.shape[0] - 1, -1, -1):
        t = max(t, back[k]) + p[job, k]
        out[k] = t


@_inline_jit
def lb1_body(front: np.ndarray, remain: np.ndarray, back: np.ndarray) -> int:
    """LB1 of a subproblem from its front, remaining work and back vectors."""
    lb = 0
    for k in range(front.shape[0]):
        lb = max(lb, front[k] + remain[k] + back[k])
    return lb


@_inline_jit
def lb1_forward_child_body(front: np.ndarray, remain_back: np.ndarray, p: np.ndarray, job: int) -> int:
    """LB1 of the child that appends ``job`` to sigma1, in O(m).

    ``remain_back[k]`` = remain[k] + back[k] of the parent.  The child's front on machine k
    is s_k + p[job, k] with s_k = max(front'[k-1], front[k]) and its remaining work loses
    p[job, k], so its LB1 is max_k s_k + remain_back[k].
    """
    lb = int32(0)  # int32 throughout: numba widens int32 sums to int64, which a GPU emulates
    t = int32(0)
    for k in range(front.shape[0]):
        s = max(t, int32(front[k]))
        lb = max(lb, int32(s + remain_back[k]))
        t = int32(s + p[job, k])
    return lb


@_inline_jit
def lb1_backward_child_body(back: np.ndarray, front_remain: np.ndarray, p: np.ndarray, job: int) -> int:
    """LB1 of the child that prepends ``job`` to sigma2, in O(m) (mirror of the forward case)."""
    lb = int32(0)
    t = int32(0)
    for k in range(back.shape[0] - 1, -1, -1):
        s = max(t, int32(back[k]))
        lb = max(lb, int32(s + front_remain[k]))
        t = int32(s + p[job, k])
    return lb


def head_tail_minima(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest head (time before machine k) and tail (time after machine k) over all jobs."""
    done = np.cumsum(p, axis=1, dtype=np.int64)
    heads = done - p
    tails = done[:, -1:] - done
    return heads.min(axis=0).astype(np.int32), tails.min(axis=0).astype(np.int32)


def lb2_tables(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per machine pair (k < l): the pair, the lags and the Johnson order of all jobs.

    Returns ``pairs`` (P, 2) int32, ``lags`` (P, n) int32 (sum of p[j, k+1..l-1]) and
    ``orders`` (P, n) int32: jobs sorted by Johnson's rule on (p[j,k] + lag, p[j,l] + lag),
    which is optimal for two machines with time lags (Mitten 1959).
    """
    n, m = p.shape
    pairs = np.array([(k, l) for k in range(m) for l in range(k + 1, m)], dtype=np.int32).reshape(-1, 2)
    lags = np.zeros((len(pairs), n), dtype=np.int32)
    orders = np.zeros((len(pairs), n), dtype=np.int32)
    cumulative = np.concatenate([np.zeros((n, 1), dtype=np.int64), np.cumsum(p, axis=1)], axis=1)
    for index, (k, l) in enumerate(pairs):
        lag = cumulative[:, l] - cumulative[:, k + 1]
        a = p[:, k] + lag
        b = p[:, l] + lag
        first = sorted((j for j in range(n) if a[j] <= b[j]), key=lambda j: (a[j], j))
        last = sorted((j for j in range(n) if a[j] > b[j]), key=lambda j: (-b[j], j))
        lags[index] = lag
        orders[index] = first + last
    return pairs, lags, orders


@_inline_jit
def lb2_body(
    front: np.ndarray,
    remain: np.ndarray,
    back: np.ndarray,
    scheduled: np.ndarray,
    p: np.ndarray,
    pairs: np.ndarray,
    lags: np.ndarray,
    orders: np.ndarray,
) -> int:
    """LB2: max of LB1 and the Johnson two-machine bound over all machine pairs.

    ``scheduled[j]`` is nonzero for jobs in sigma1 or sigma2; the others are unscheduled.
    """
    lb = lb1_body(front, remain, back)
    n = scheduled.shape[0]
    for index in range(pairs.shape[0]):
        k = pairs[index, 0]
        l = pairs[index, 1]
        t0 = front[k]
        t1 = front[l]
        for position in range(n):
            j = orders[index, position]
            if scheduled[j] == 0:
                t0 += p[j, k]
                t1 = max(t1, t0 + lags[index, j]) + p[j, l]
        lb = max(lb, t1 + back[l])
    return lb


# ----------------------------------------------------------------------------------------
# Plain-Python entry points (tests, the CLI's root bound); the explorer uses the bodies.


def subproblem_vectors(p: np.ndarray, sigma1, sigma2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """front, remain, back (int64) of the subproblem (sigma1, sigma2), as the bounds use them."""
    n, m = p.shape
    front = np.zeros(m, dtype=np.int64)
    back = np.zeros(m, dtype=np.int64)
    for job in sigma1:
        add_front_body(front.copy(), p, int(job), front)
    for job in reversed(list(sigma2)):
        add_back_body(back.copy(), p, int(job), back)
    scheduled = np.zeros(n, dtype=bool)
    scheduled[list(sigma1)] = True
    scheduled[list(sigma2)] = True
    remain = p[~scheduled].sum(axis=0, dtype=np.int64)
    min_heads, min_tails = head_tail_minima(p)
    return np.maximum(front, min_heads), remain, np.maximum(back, min_tails)


def lower_bound(p: np.ndarray, sigma1, sigma2, bound: str = DEFAULT_BOUND) -> int:
    """LB of the subproblem (sigma1, sigma2) computed from scratch; ``bound`` in BOUND_NAMES.

    ``lb1+lb2`` is the bound the explorer applies to a child that survives LB1, i.e. LB2.
    """
    front, remain, back = subproblem_vectors(p, sigma1, sigma2)
    if bound_code(bound) == LB1:
        return int(lb1_body(front, remain, back))
    scheduled = np.zeros(p.shape[0], dtype=np.int8)
    scheduled[list(sigma1) + list(sigma2)] = 1
    return int(lb2_body(front, remain, back, scheduled, p, *lb2_tables(p)))
