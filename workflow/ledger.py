"""The coordinator's interval ledger: who explores what, the incumbent, the counters.

No Dask, so it is tested on its own; the scheduler plugin in ``coordinator.py`` wraps one
ledger per run.  Work units are ``PackedUnit`` arrays (numba set operations): a GPU worker
reports thousands of intervals per checkpoint.  The unassigned pool is a short list of
exact ``(a, b)`` integer pairs.

Protocol (PBB@Cluster section 4, adapted): an explorer checkpoints with the intervals it
has left and the nodes it decomposed since its previous checkpoint.  The ledger keeps a
copy of every explorer's work unit; the reported intervals are intersected with that copy
(a late report from a task whose work was re-assigned after a worker loss counts for
nothing).  Work is never taken from an explorer between its checkpoints: when others are
waiting, the right half of a reporting explorer's largest interval moves to the pool (or,
from an explorer of many intervals such as a GPU's, every second interval by size: about half
its work), so no position is explored twice and node counts stay exact.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from gmpy2 import mpz

from ..search.factoradic import factorial
from ..search.intervals import Interval, WorkUnit, share_log10
from ..search.packed import PackedUnit

CONTINUE, REPLACE, WAIT, STOP = "continue", "replace", "wait", "stop"


@dataclass(frozen=True)
class Reply:
    """What the coordinator tells an explorer after a checkpoint."""

    action: str  # CONTINUE, REPLACE (explore ``work`` instead), WAIT (ask again soon), STOP
    work: PackedUnit | None
    ub: int  # prune children with LB >= ub
    hurry: bool = False  # others wait for work: checkpoint again soon, so that they can get some


class Ledger:
    """The global state of one run."""

    def __init__(
        self,
        unassigned: PackedUnit,
        *,
        pieces: int = 1,
        ub: int,
        permutation: tuple[int, ...] | None = None,
        nodes: int = 0,
        leaves: int = 0,
        min_split: int = 2,
    ) -> None:
        self.n = unassigned.n
        self.pool: deque[Interval] = deque(_cut(unassigned.intervals(), pieces))  # unassigned, handed out in order
        self.active: dict[str, PackedUnit] = {}  # explorer id -> the coordinator's copy
        self.worker_of: dict[str, str] = {}  # explorer id -> worker address
        self.capacity_of: dict[str, int] = {}  # explorer id -> intervals it works on at once
        self.waiting: set[str] = set()  # explorers with nothing to do
        self.ub = ub  # incumbent makespan, or the initial pruning bound
        self.permutation = permutation  # schedule found below the initial bound, if any
        self.nodes = nodes
        self.leaves = leaves
        self.min_split = max(2, min_split)
        self.stopping = False
        self.stopped: set[str] = set()  # explorers told to stop (after ``stop``)
        self.checkpoints = 0

    # ------------------------------------------------------------------ queries
    def remaining_size(self) -> mpz:
        """Positions of [0, n!) not proved explored, from sizes only (pool and copies are disjoint)."""
        return sum((b - a for a, b in self.pool), mpz(0)) + sum((c.size for c in self.active.values()), mpz(0))

    def remaining_fraction(self) -> float:
        """Share of [0, n!) not proved explored."""
        return int(self.remaining_size()) / int(factorial(self.n))

    def remaining_log10(self) -> float | None:
        """log10 of that share (None when nothing is left): readable where the share is tiny."""
        return share_log10(self.remaining_size(), self.n)

    def activity(self) -> dict[str, float]:
        """Per worker, the share of its explorers' capacity (threads, IVMs) holding work."""
        busy: dict[str, int] = {}
        capacity: dict[str, int] = {}
        for explorer, worker in self.worker_of.items():
            cap = self.capacity_of[explorer]
            copy = self.active.get(explorer)
            busy[worker] = busy.get(worker, 0) + (0 if copy is None else min(len(copy), cap))
            capacity[worker] = capacity.get(worker, 0) + cap
        return {worker: busy[worker] / capacity[worker] for worker in sorted(busy)}

    def remaining(self) -> PackedUnit:
        """Everything not proved explored: the pool plus every explorer's copy."""
        pool = PackedUnit.from_work_unit(WorkUnit(self.n, self.pool))
        return PackedUnit.union_of_disjoint(self.n, [pool, *self.active.values()])

    @property
    def finished(self) -> bool:
        return not self.pool and not self.active

    # ------------------------------------------------------------------ updates
    def improve(self, makespan: int, permutation: tuple[int, ...]) -> None:
        if makespan < self.ub:
            self.ub, self.permutation = makespan, tuple(permutation)

    def checkpoint(
        self,
        explorer: str,
        worker: str,
        remaining: PackedUnit,
        nodes: int = 0,
        leaves: int = 0,
        capacity: int = 1,
    ) -> Reply:
        """Record an explorer's progress and decide what it does next.

        ``capacity``: how many intervals the explorer can work on at once (its threads or IVMs).
        """
        self.checkpoints += 1
        self.nodes += nodes
        self.leaves += leaves
        self.worker_of[explorer] = worker
        self.capacity_of[explorer] = max(1, capacity)
        copy = self.active.get(explorer)
        left = PackedUnit.empty(self.n) if copy is None else copy.intersect(remaining)
        if self.stopping:
            self._hold(explorer, left)
            self.stopped.add(explorer)
            return Reply(STOP, None, self.ub)
        if left:
            if self.waiting - {explorer} and not self.pool and left.size >= self.min_split:
                if capacity > 1 and len(left) > 1:  # many intervals (a GPU's IVMs): give half the work
                    left, half = left.split_half()
                    self.pool.extend(half.intervals())
                else:
                    left, given = left.split_largest()
                    self.pool.append(given)
            self._hold(explorer, left)
            hurry = len(self.waiting - {explorer}) > len(self.pool)  # waiters the pool cannot serve
            return Reply(CONTINUE if left == remaining else REPLACE, left, self.ub, hurry)
        self._hold(explorer, left)
        if self.pool:
            work = self._take_from_pool(capacity, len(self.waiting - {explorer}))
            self._hold(explorer, work)
            return Reply(REPLACE, work, self.ub)
        if self.finished:
            return Reply(STOP, None, self.ub)
        self.waiting.add(explorer)
        return Reply(WAIT, None, self.ub)

    def remove_worker(self, worker: str) -> None:
        """A worker is gone: its explorers' work (as of their last checkpoint) returns to the pool."""
        for explorer in [e for e, w in self.worker_of.items() if w == worker]:
            copy = self.active.pop(explorer, None)
            if copy is not None:
                self.pool.extend(copy.intervals())
            self.waiting.discard(explorer)
            del self.worker_of[explorer]
            self.capacity_of.pop(explorer, None)

    def stop(self) -> None:
        """Answer STOP to every explorer from now on; their copies stay in the ledger."""
        self.stopping = True

    @property
    def all_stopped(self) -> bool:
        """Stopping, and every explorer on a worker still present was told so (it holds no work
        beyond its last checkpoint)."""
        return self.stopping and self.stopped.issuperset(self.worker_of)

    # ------------------------------------------------------------------ helpers
    def _hold(self, explorer: str, unit: PackedUnit) -> None:
        if unit:
            self.active[explorer] = unit
            self.waiting.discard(explorer)
        else:
            self.active.pop(explorer, None)

    def _take_from_pool(self, capacity: int, others: int) -> PackedUnit:
        """Up to ``capacity`` intervals from the pool, leaving one for each of the ``others``
        waiting explorers; a last interval is halved while others wait."""
        taken = [self.pool.popleft()]
        while len(taken) < capacity and len(self.pool) > others:
            taken.append(self.pool.popleft())
        a, b = taken[-1]
        if not self.pool and others and b - a >= self.min_split:
            mid = (a + b) // 2
            self.pool.append((mid, b))
            taken[-1] = (a, mid)
        return PackedUnit.from_work_unit(WorkUnit(self.n, taken))


def _cut(intervals: list[Interval], pieces: int) -> list[Interval]:
    """Halve the largest interval until there are ``pieces`` (so every explorer starts at once)."""
    while 0 < len(intervals) < pieces:
        largest = max(range(len(intervals)), key=lambda i: intervals[i][1] - intervals[i][0])
        a, b = intervals[largest]
        if b - a < 2:
            break
        mid = (a + b) // 2
        intervals[largest : largest + 1] = [(a, mid), (mid, b)]
    return intervals
