"""Iterated greedy for the makespan (Ruiz and Stuetzle 2007), in numba.

From NEH's schedule improved by insertion local search, each iteration removes ``d`` random
jobs, reinserts them one by one at their best position (Taillard's O(n m) evaluation of all
positions), applies the insertion local search, and accepts the result if it is better, or
worse with probability exp(-delta / T) at the constant temperature
T = tau * sum(p) / (n m 10).  The paper's calibrated d = 4, tau = 0.4 are the defaults.
(Local search on the partial sequences as well, after Dubois-Lacoste, Pagnozzi and Stuetzle
2017, was measured worse here at the same CPU time, ARPD 1.47 against 1.28 on ta081-ta090:
benchmarks/results/heuristic_partial_search_2core_2026-11-30.json, commit 02725b8.)

Randomness comes from an explicit xorshift64* state, so a seed and an iteration count give
the same schedule on any machine and in any number of chunks; time limits are applied by
the Python driver between chunks of iterations.  The chunks release the GIL: beside a GPU
explorer in one Dask worker, iterated greedy must not starve the thread that launches kernels.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from .evaluation import _as_times, best_insertion, makespan_body, neh

DESTROY = 4  # jobs removed per iteration (d)
TEMPERATURE = 0.4  # tau
CHUNK_SECONDS = 0.05


@njit(inline="always")
def _next(rng) -> np.uint64:
    """xorshift64* step on the one-element state ``rng``."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return x * np.uint64(2685821657736338717)


@njit(inline="always")
def _below(rng, k: int) -> int:
    """A random integer in [0, k)."""
    return int((_next(rng) >> np.uint64(11)) % np.uint64(k))


@njit(inline="always")
def _uniform(rng) -> float:
    return float(_next(rng) >> np.uint64(11)) / 9007199254740992.0  # 2**53


@njit(cache=True, nogil=True)
def _insert(seq, length, job, position) -> None:
    for i in range(length, position, -1):
        seq[i] = seq[i - 1]
    seq[position] = job


@njit(cache=True, nogil=True)
def _remove(seq, length, position) -> int:
    job = seq[position]
    for i in range(position, length - 1):
        seq[i] = seq[i + 1]
    return job


@njit(cache=True, nogil=True)
def _local_search(p, seq, n, cmax, rng, order, e, q, f) -> int:
    """Insertion local search on ``seq[:n]``: every job, in random order, moves to its best
    position; repeat while that improves the makespan.  Returns the new makespan."""
    improved = True
    while improved:
        improved = False
        for i in range(n):
            order[i] = seq[i]
        for i in range(n - 1, 0, -1):  # shuffle
            j = _below(rng, i + 1)
            order[i], order[j] = order[j], order[i]
        for t in range(n):
            job = order[t]
            position = 0
            while seq[position] != job:
                position += 1
            _remove(seq, n, position)
            best, where = best_insertion(p, seq, n - 1, job, e, q, f)
            _insert(seq, n - 1, job, where)
            if best < cmax:
                cmax = best
                improved = True
    return cmax


@njit(cache=True, nogil=True)
def _iterate(p, current, current_cmax, best, best_cmax, rng, iterations, destroy, temperature):
    """Run ``iterations`` iterations; returns (current makespan, best makespan)."""
    n, m = p.shape
    candidate = np.empty(n, np.int32)
    removed = np.empty(destroy, np.int32)
    order = np.empty(n, np.int32)
    e = np.zeros((n + 1, m + 1), np.int64)
    q = np.zeros((n + 1, m + 1), np.int64)
    f = np.zeros(m + 1, np.int64)
    for _ in range(iterations):
        candidate[:] = current
        length = n
        for r in range(destroy):
            removed[r] = _remove(candidate, length, _below(rng, length))
            length -= 1
        cmax = 0
        for r in range(destroy):
            cmax, where = best_insertion(p, candidate, length, removed[r], e, q, f)
            _insert(candidate, length, removed[r], where)
            length += 1
        cmax = _local_search(p, candidate, n, cmax, rng, order, e, q, f)
        if cmax < current_cmax or _uniform(rng) <= np.exp(-(cmax - current_cmax) / temperature):
            current[:] = candidate
            current_cmax = cmax
            if cmax < best_cmax:
                best[:] = candidate
                best_cmax = cmax
    return current_cmax, best_cmax


@dataclass(frozen=True)
class HeuristicResult:
    """The best schedule iterated greedy found."""

    makespan: int
    permutation: np.ndarray
    iterations: int
    elapsed_s: float


def iterated_greedy(
    p: np.ndarray,
    *,
    seconds: float | None = None,
    iterations: int | None = None,
    seed: int = 0,
    destroy: int = DESTROY,
    tau: float = TEMPERATURE,
    on_improvement: Callable[[int, np.ndarray], bool | None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> HeuristicResult:
    """Iterated greedy from NEH until ``seconds`` or ``iterations`` (at least one is needed).

    ``on_improvement(makespan, permutation)`` is called for every new best schedule (the
    first being NEH's after local search); ``should_stop()`` is asked between chunks.
    ``clock`` measures ``seconds`` (``time.process_time`` for a CPU-time budget).
    """
    if seconds is None and iterations is None:
        raise ValueError("iterated_greedy needs seconds or iterations")
    started, clock_start = time.monotonic(), clock()
    p = _as_times(p)
    n, m = p.shape
    destroy = max(1, min(destroy, n - 1)) if n > 1 else 0
    temperature = max(tau * float(p.sum(dtype=np.int64)) / (n * m * 10), 1e-9)
    rng = np.array([(seed * 0x9E3779B97F4A7C15 & (2**64 - 1)) | 1], np.uint64)  # odd: never the zero state
    _, current = neh(p)
    current = current.astype(np.int32)
    if n > 1:
        e, q = np.zeros((n + 1, m + 1), np.int64), np.zeros((n + 1, m + 1), np.int64)
        cmax = makespan_body(p, current, np.empty(m, np.int64))
        cmax = _local_search(p, current, n, cmax, rng, np.empty(n, np.int32), e, q, np.zeros(m + 1, np.int64))
    current_cmax = int(makespan_body(p, current, np.empty(m, np.int64)))
    best, best_cmax = current.copy(), current_cmax
    if on_improvement is not None:
        on_improvement(best_cmax, best.copy())
    done, chunk = 0, 1
    while n > 1 and (iterations is None or done < iterations):
        if seconds is not None and clock() - clock_start >= seconds:
            break
        if should_stop is not None and should_stop():
            break
        steps = chunk if iterations is None else min(chunk, iterations - done)
        tick = time.perf_counter()
        current_cmax, new_best = _iterate(p, current, current_cmax, best, best_cmax, rng, steps, destroy,
                                          temperature)  # fmt: skip
        took = time.perf_counter() - tick
        done += steps
        if new_best < best_cmax:
            best_cmax = int(new_best)
            if on_improvement is not None:
                on_improvement(best_cmax, best.copy())
        chunk = max(1, min(chunk * 2, int(chunk * CHUNK_SECONDS / max(took, 1e-6))))
    if int(makespan_body(p, best, np.empty(m, np.int64))) != best_cmax:
        raise RuntimeError("iterated greedy lost track of its best makespan (a bug)")
    return HeuristicResult(best_cmax, best, done, time.monotonic() - started)
