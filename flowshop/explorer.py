"""Explore a work unit with several IVM explorers on threads of one process.

Each thread owns one IVM and runs it in chunks of a few milliseconds (the numba code
releases the GIL).  Between chunks, under one lock, a thread publishes its incumbent and
node count and answers work-stealing requests: an idle thread asks the busiest explorer
for the right half [(pos + end) / 2, end) of its interval (paper, section 2.5).  The
explorers never read each other's arrays while they run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from gmpy2 import mpz

from .choices import DEFAULT_BOUND, DEFAULT_BRANCH, bound_code, branch_code
from .factoradic import digits_to_int, factorial, int_to_digits
from .intervals import Interval, WorkUnit, split_interval
from .ivm import IMPROVED, IVM, LEAVES, NODES, UB, Problem

CHUNK_SECONDS = 0.002  # default duration of one chunk: bounds steal latency; ~1% overhead measured
MIN_STEPS, MAX_STEPS = 64, 1 << 22


@dataclass(frozen=True)
class Snapshot:
    """Counters of a running exploration, passed to the progress callback."""

    nodes: int
    leaves: int
    ub: int
    elapsed_s: float


@dataclass(frozen=True)
class ExploreResult:
    """What an exploration did and what is left of its work unit."""

    remaining: WorkUnit
    nodes: int
    leaves: int
    best_makespan: int | None  # best schedule found strictly below the initial UB
    best_permutation: np.ndarray | None
    elapsed_s: float


class _Explorer:
    """One thread's IVM with its current interval [position, end) and mailbox."""

    def __init__(self, problem: Problem, chunk_seconds: float) -> None:
        self.ivm = IVM(problem)
        self.chunk_seconds = chunk_seconds
        self.n = problem.n
        self.end = mpz(0)
        self.active = False
        self.remaining = mpz(0)  # published estimate of end - position
        self.inbox: list[Interval] = []
        self.thief: _Explorer | None = None  # an idle explorer waiting for half of our interval
        self.victim: _Explorer | None = None  # whom we asked, while idle
        self.steps = 1024

    def begin(self, interval: Interval, ub: int) -> None:
        a, b = interval
        end_digits = None if b == factorial(self.n) else int_to_digits(b, self.n)
        self.ivm.start(int_to_digits(a, self.n), end_digits, ub)
        self.end = b

    def adapt_chunk(self, steps: int, seconds: float) -> None:
        """Size the next chunk to last about ``chunk_seconds`` at the measured rate."""
        if steps > 0 and seconds > 0:
            wanted = steps / seconds * self.chunk_seconds
            self.steps = int(min(MAX_STEPS, max(MIN_STEPS, wanted, self.steps / 2), self.steps * 2))

    def position(self) -> mpz:
        return digits_to_int(self.ivm.V)

    def left(self) -> Interval | None:
        """The part of the interval not explored yet (None when done)."""
        if self.ivm.done:
            return None
        return self.position(), self.end


class _Exploration:
    """Shared state of one ``explore`` call; all fields are guarded by ``cond``."""

    def __init__(self, problem, work, ub, threads, max_nodes, max_seconds, chunk_seconds):
        self.cond = threading.Condition()
        self.problem = problem
        self.ub = ub
        self.initial_ub = ub
        self.best: np.ndarray | None = None
        self.pool: list[Interval] = list(work)
        while self.pool and len(self.pool) < threads:  # give every thread a first interval
            largest = max(range(len(self.pool)), key=lambda i: self.pool[i][1] - self.pool[i][0])
            a, b = self.pool[largest]
            if b - a < 2:
                break
            left, right = split_interval(a, b)
            self.pool[largest : largest + 1] = [left, right]
        self.explorers = [_Explorer(problem, chunk_seconds) for _ in range(threads)]
        self.max_nodes = max_nodes
        self.deadline = None if max_seconds is None else time.monotonic() + max_seconds
        self.stop = False
        self.error: BaseException | None = None

    def counters(self) -> tuple[int, int]:
        nodes = sum(int(e.ivm.scalars[NODES]) for e in self.explorers)
        leaves = sum(int(e.ivm.scalars[LEAVES]) for e in self.explorers)
        return nodes, leaves

    # -- called with the lock held --------------------------------------------------
    def _acquire(self, me: _Explorer) -> Interval | None:
        """Next interval for an idle explorer: inbox, pool, or stolen; None to quit."""
        me.active = False
        if me.thief is not None:  # nothing left to give
            me.thief = None
            self.cond.notify_all()
        while True:
            if self.stop:
                return None
            if me.inbox or self.pool:
                interval = me.inbox.pop() if me.inbox else self.pool.pop(0)
                me.victim = None
                me.active = True  # busy from now on: nobody may conclude that all work is done
                me.remaining = interval[1] - interval[0]
                return interval
            busy = [e for e in self.explorers if e.active]
            if not busy and not any(e.inbox for e in self.explorers):
                self.stop = True  # the whole work unit is explored
                self.cond.notify_all()
                return None
            if me.victim is None or me.victim.thief is not me:
                candidates = [e for e in busy if e.thief is None and e.remaining >= 2]
                if candidates:
                    me.victim = max(candidates, key=lambda e: e.remaining)
                    me.victim.thief = me
            self.cond.wait(0.05)

    def _sync(self, me: _Explorer) -> bool:
        """Between chunks: share the incumbent, serve a thief, check limits."""
        s = me.ivm.scalars
        if s[IMPROVED]:
            s[IMPROVED] = 0
            if s[UB] < self.ub:
                self.ub = int(s[UB])
                self.best = me.ivm.best.copy()
        s[UB] = min(int(s[UB]), self.ub)
        left = me.left()
        me.remaining = mpz(0) if left is None else left[1] - left[0]
        if me.thief is not None and left is not None:
            position, end = left
            mid = (position + end) // 2
            if mid > position:
                me.ivm.set_end(int_to_digits(mid, me.n))
                me.end = mid
                me.remaining = mid - position
                me.thief.inbox.append((mid, end))
            me.thief = None
            self.cond.notify_all()
        if self.max_nodes is not None and self.counters()[0] >= self.max_nodes:
            self.stop = True
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stop = True
        return not self.stop

    # -- thread body ----------------------------------------------------------------
    def run(self, me: _Explorer) -> None:
        try:
            while True:
                with self.cond:
                    interval = self._acquire(me)
                    if interval is None:
                        return
                    ub = self.ub
                me.begin(interval, ub)  # decoding the start position happens outside the lock
                with self.cond:
                    go_on = self._sync(me)
                while go_on and not me.ivm.done:
                    steps = me.steps
                    if self.max_nodes is not None:
                        steps = max(1, min(steps, self.max_nodes - self.counters()[0]))
                    before = me.ivm.steps_done()
                    started = time.perf_counter()
                    me.ivm.run(steps)
                    me.adapt_chunk(me.ivm.steps_done() - before, time.perf_counter() - started)
                    with self.cond:
                        go_on = self._sync(me)
                if not go_on:
                    return
        except BaseException as error:  # surfaced by explore() in the calling thread
            with self.cond:
                self.error = error
                self.stop = True
                self.cond.notify_all()

    def remaining(self) -> WorkUnit:
        intervals = list(self.pool)
        for e in self.explorers:
            intervals += e.inbox
            if e.active:
                left = e.left()
                if left is not None:
                    intervals.append(left)
        return WorkUnit(self.problem.n, intervals)


def explore(
    p: np.ndarray,
    work: WorkUnit,
    ub: int,
    *,
    bound: str = DEFAULT_BOUND,
    branch: str = DEFAULT_BRANCH,
    threads: int = 1,
    max_nodes: int | None = None,
    max_seconds: float | None = None,
    on_progress: Callable[[Snapshot], bool | None] | None = None,
    progress_every: float = 1.0,
    chunk_seconds: float = CHUNK_SECONDS,
) -> ExploreResult:
    """Search ``work`` for schedules with makespan < ``ub``; stop when done or at a budget.

    Children with LB >= UB are pruned, so with ``ub`` = optimum the explored tree (and the
    node count) is the same for any number of threads.  A KeyboardInterrupt stops the
    threads at their next chunk boundary and returns what is left, like a budget.
    ``chunk_seconds`` is how long a thread runs between visits to Python (stealing, limits):
    raise it where other Python threads compete for the GIL (a Dask worker).  ``on_progress``
    is called every ``progress_every`` seconds; returning True stops the exploration like a
    budget (a Dask explorer stops early when other explorers wait for work).
    """
    if threads < 1:
        raise ValueError("threads must be >= 1")
    problem = Problem(p, bound_code(bound), branch_code(branch))
    if work.n != problem.n:
        raise ValueError(f"work unit is for n={work.n}, instance has n={problem.n}")
    started = time.monotonic()
    state = _Exploration(problem, work, ub, threads, max_nodes, max_seconds, chunk_seconds)
    workers = [threading.Thread(target=state.run, args=(e,), daemon=True) for e in state.explorers]
    for w in workers:
        w.start()
    next_report = started + progress_every
    try:
        for w in workers:
            while w.is_alive():
                w.join(0.05)
                if on_progress is not None and time.monotonic() >= next_report:
                    next_report += progress_every
                    with state.cond:
                        nodes, leaves = state.counters()
                        snapshot = Snapshot(nodes, leaves, state.ub, time.monotonic() - started)
                    if on_progress(snapshot):
                        with state.cond:
                            state.stop = True
                            state.cond.notify_all()
    except KeyboardInterrupt:
        with state.cond:
            state.stop = True
            state.cond.notify_all()
        for w in workers:
            w.join()
    if state.error is not None:
        raise state.error
    nodes, leaves = state.counters()
    improved = state.ub < state.initial_ub
    return ExploreResult(
        remaining=state.remaining(),
        nodes=nodes,
        leaves=leaves,
        best_makespan=state.ub if improved else None,
        best_permutation=state.best if improved else None,
        elapsed_s=time.monotonic() - started,
    )
