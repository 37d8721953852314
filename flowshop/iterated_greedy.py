"""Iterated greedy for the makespan (Ruiz and Stuetzle 2007), in numba.

From NEH's schedule improved by insertion local search, each iteration removes ``d`` random
jobs, reinserts them one by one at their best position, applies the insertion local search,
and accepts the result if it is better, or worse with probability exp(-delta / T) at the
constant temperature T = tau * sum(p) / (n m 10).  The paper's d = 4 and tau = 0.4 stay the
defaults: recalibrated on ta081-ta090 (seed 0, 10 s each, a third of the budget), d = 3, 4, 5,
6, 8 gave ARPD 1.07, 1.07, 1.10, 1.13, 1.23 and tau = 0.25, 0.4, 0.6, 0.8 gave 1.21, 1.07,
1.12, 1.06 (differences of 0.05 are noise there).

* Insertion: all positions in O(length m) with Taillard's (1990) heads and tails, which are
  kept between insertions: after a move only the heads behind and the tails in front of the
  changed positions are recomputed (about half the rows), and a position's evaluation stops
  as soon as it exceeds the best one (``evaluation.insert_best``, which NEH uses too, with
  ties to the earliest position).  The same iterations (same schedules) ran 2.5 times faster
  than with the heads and tails recomputed at every insertion (853 against 334 per second
  on ta081).
* Ties between best positions go to the one that leaves the least idle time, before the
  inserted job and before its successor, on machines 2..m (the idea of Fernandez-Viagas and
  Framinan 2014, "On insertion tie-breaking rules in heuristics for the PFSP"; the
  measure here is our own).  Measured against the earliest position, the latest and a random
  one: ARPD 1.13 against 1.50, 1.56 and 1.31 (ta081-ta090, seed 0, 6 s each).
* Local search: the jobs are taken in the order of the best schedule so far and each moved
  to its best position, cyclically, until n moves in a row fail to improve the makespan
  (the referenced insertion scheme of Pan, Tasgetiren and Liang 2008, "A discrete
  differential evolution algorithm for the permutation flowshop scheduling problem").
  Against the paper's passes in random order until a pass fails: ARPD 1.13 against 1.27
  (same setting); with the current schedule as the reference instead of the best: 1.26.
At the literature's budget (n m / 2 x 30 ms CPU, seeds 0-2, benchmarks/heuristic.py) these
three changes took the ARPD from 0.58 to 0.49 on ta051-ta060 and from 1.36 to 0.95 on
ta081-ta090 (benchmarks/results/heuristic_2core_2026-11-30.json); int32 heads and tails
were no faster.
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

from .evaluation import _as_times, insert_best, makespan_body, neh, take

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
def _local_search(p, seq, n, cmax, reference, heads, tails, valid) -> int:
    """Insertion local search on ``seq[:n]``: the jobs of ``reference`` in turn, cyclically,
    move to their best position until n moves in a row leave the makespan as it was.
    Returns the new makespan."""
    t = 0
    failed = 0
    while failed < n:
        job = reference[t]
        t = t + 1 if t + 1 < n else 0
        position = 0
        while seq[position] != job:
            position += 1
        take(seq, n, position, valid)
        c = insert_best(p, seq, n - 1, job, heads, tails, valid, True)
        if c < cmax:
            cmax = c
            failed = 0
        else:
            failed += 1
    return cmax


@njit(cache=True, nogil=True)
def _iterate(p, current, current_cmax, best, best_cmax, rng, iterations, destroy, temperature):
    """Run ``iterations`` iterations; returns (current makespan, best makespan)."""
    n, m = p.shape
    candidate = np.empty(n, np.int32)
    removed = np.empty(destroy, np.int32)
    heads = np.zeros((n + 1, m + 1), np.int64)
    tails = np.zeros((n + 1, m + 1), np.int64)
    valid = np.zeros(2, np.int64)
    for _ in range(iterations):
        candidate[:] = current
        valid[0] = 0
        valid[1] = 0
        length = n
        for r in range(destroy):
            removed[r] = take(candidate, length, _below(rng, length), valid)
            length -= 1
        cmax = 0
        for r in range(destroy):
            cmax = insert_best(p, candidate, length, removed[r], heads, tails, valid, True)
            length += 1
        cmax = _local_search(p, candidate, n, cmax, best, heads, tails, valid)
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
    ``clock`` measures ``seconds`` (``time.process_time`` for a CPU-time budget).  ``seed``
    is from 0 to 2**64 - 1, the random state's size: others would wrap onto these.
    """
    if seconds is None and iterations is None:
        raise ValueError("iterated_greedy needs seconds or iterations")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be from 0 to 2**64 - 1, got {seed}")
    started, clock_start = time.monotonic(), clock()
    p = _as_times(p)
    n, m = p.shape
    destroy = max(1, min(destroy, n - 1)) if n > 1 else 0
    temperature = max(tau * float(p.sum(dtype=np.int64)) / (n * m * 10), 1e-9)
    rng = np.array([(seed * 0x9E3779B97F4A7C15 & (2**64 - 1)) | 1], np.uint64)  # odd: never the zero state
    _, current = neh(p)
    current = current.astype(np.int32)
    if n > 1:
        heads, tails = np.zeros((n + 1, m + 1), np.int64), np.zeros((n + 1, m + 1), np.int64)
        cmax = makespan_body(p, current, np.empty(m, np.int64))
        cmax = _local_search(p, current, n, cmax, current.copy(), heads, tails, np.zeros(2, np.int64))
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
        current_cmax, new_best = _iterate(p, current, current_cmax, best, best_cmax, rng, steps, destroy, temperature)
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
