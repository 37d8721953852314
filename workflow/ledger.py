"""The coordinator's ledger: who explores what, the incumbent, the counters.

No Dask, so it is tested on its own; the scheduler plugin in ``coordinator.py`` wraps one
ledger per run.  It knows no family: work is a ``WorkSet`` of its run's ``WorkSpace``
(``family.py``; flow shop: ``PackedUnit``, intervals of [0, n!) whose set operations are numba
loops, since a GPU worker reports thousands of intervals per checkpoint; spatial: boxes).  The
unassigned pool is a short list of work sets, handed out in order.

Protocol (PBB@Cluster section 4, adapted): an explorer checkpoints with the work it has left
and the nodes it decomposed since its previous checkpoint.  The ledger keeps a copy of every
explorer's work; a report counts as far as the copy accepts it (flow shop: its intersection
with the copy; spatial: the reported boxes that lie inside a box of the copy), so that nothing
outside the copy comes back.  Work is never taken from an explorer between its checkpoints: when
others are waiting, part of a reporting explorer's work moves to the pool (``split_piece``: the
right half of its largest interval; half its boxes, never part of a single box), or from an
explorer of many pieces such as a GPU's every second piece by size (``split_half``), and the
explorer is told to go on with the rest, so no part is explored twice and node counts stay exact.

Every reply carries the explorer's generation, a number the ledger raises at each report it counts;
the explorer echoes it in its next checkpoint (0 in a task's first: it holds nothing yet).  A report
of another generation (a message delivered twice, or a late one of an earlier task under the same
explorer id, e.g. one whose worker was removed) counts for nothing, nodes included: the explorer is
told to go on with what the ledger holds for it (its copy; to wait when it holds none; to stop when
the run does).  A task's first checkpoint takes over its explorer's copy, if the ledger holds one; it
names the task's attempt (a fresh id each time the task runs), so that the first checkpoint of an
attempt already heard (delivered twice, or late) counts for nothing either.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..core.family import WorkSet
from .protocol import Action


@dataclass(frozen=True)
class Reply:
    """What the coordinator tells an explorer after a checkpoint."""

    action: Action
    work: WorkSet | None
    ub: Any  # the incumbent's value (or the initial pruning bound): prune what cannot beat it
    hurry: bool = False  # others wait for work: checkpoint again soon, so that they can get some
    generation: int = 0  # what the explorer's next checkpoint echoes


class Ledger:
    """The global state of one run."""

    def __init__(
        self,
        unassigned: WorkSet,
        *,
        pieces: int = 1,
        ub: Any,
        solution: Any = None,
        nodes: int = 0,
        leaves: int = 0,
        min_split: int = 2,
        settled: float = math.inf,
        node_limit: int | None = None,
    ) -> None:
        self.space = unassigned.space
        self.pool: deque[WorkSet] = deque(_cut(unassigned.pieces(), pieces))  # handed out in order
        self.active: dict[str, WorkSet] = {}  # explorer id -> the coordinator's copy
        self.worker_of: dict[str, str] = {}  # explorer id -> worker address
        self.capacity_of: dict[str, int] = {}  # explorer id -> intervals it works on at once
        self.waiting: set[str] = set()  # explorers with nothing to do
        self.generations: dict[str, int] = {}  # explorer id -> the generation its next report must carry
        self.attempts: dict[str, str] = {}  # explorer id -> the attempt of its task whose first report counted
        self.ub = ub  # the incumbent's value, or the initial pruning bound
        self.solution = solution  # the incumbent (a schedule, a point) found below the initial bound, if any
        self.nodes = nodes
        self.leaves = leaves
        self.settled = settled  # a lower bound of all the work discarded without being explored to its end
        self.min_split = max(2, min_split)
        self.node_limit = node_limit  # the run stops once ``nodes`` reach it
        self.stopping = False
        self.stopped: set[str] = set()  # explorers told to stop (after ``stop``)
        self.checkpoints = 0

    # ------------------------------------------------------------------ queries
    def _sets(self) -> list[WorkSet]:
        return [*self.pool, *self.active.values()]  # disjoint

    def remaining_fraction(self) -> float:
        """Share of the space not proved explored."""
        return self.space.remaining_fraction(self._sets())

    def lower_bound(self) -> float | None:
        """The run's certified lower bound where its pieces hold bounds (spatial): below every open
        piece and everything settled; None for a family whose pieces hold none."""
        lowest = self.space.lower_bound(self._sets())
        return None if lowest is None else min(self.settled, lowest)

    def remaining_log10(self) -> float | None:
        """log10 of that share (None when nothing is left): readable where the share is tiny."""
        return self.space.remaining_log10(self._sets())

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

    def remaining(self) -> WorkSet:
        """Everything not proved explored: the pool plus every explorer's copy."""
        return self.space.union(self._sets())

    def pieces(self) -> int:
        """The pieces of work open (intervals, boxes) as of the last checkpoints."""
        return sum(len(s) for s in self._sets())

    def nodes_left(self) -> int | None:
        """The nodes an explorer may decompose before its next checkpoint: those left below the
        node limit (each explorer may take them all, so a run of k explorers passes the limit by
        less than k times them); None without a limit."""
        return None if self.node_limit is None else max(1, self.node_limit - self.nodes)

    @property
    def finished(self) -> bool:
        return not self.pool and not self.active

    # ------------------------------------------------------------------ updates
    def improve(self, value: Any, solution: Any) -> None:
        """Take the incumbent ``(value, solution)`` if its value is below the current one."""
        if value < self.ub:
            self.ub, self.solution = value, solution

    def checkpoint(
        self,
        explorer: str,
        worker: str,
        remaining: WorkSet,
        nodes: int = 0,
        leaves: int = 0,
        capacity: int = 1,
        settled: float = math.inf,
        generation: int | None = None,
        attempt: str | None = None,
    ) -> Reply:
        """Record an explorer's progress and decide what it does next.

        ``capacity``: how many pieces the explorer can work on at once (its threads or IVMs);
        ``settled``: a lower bound of what it discarded since its last checkpoint without exploring
        it to the end (spatial B&B: boxes pruned within the tolerance; +inf where a family has none);
        ``generation``: that of the last reply it got (0: a task's first checkpoint; None: not
        checked); ``attempt``: the task's attempt, which a first checkpoint names (None: not
        checked), see the module.
        """
        current = self.generations.get(explorer, 0)
        heard = generation == 0 and attempt is not None and self.attempts.get(explorer) == attempt
        if heard or generation is not None and generation not in (0, current):
            return self._stale(explorer, current)
        if generation == 0 and attempt is not None:
            self.attempts[explorer] = attempt
        self.generations[explorer] = current = current + 1
        self.checkpoints += 1
        self.nodes += nodes
        self.leaves += leaves
        if self.node_limit is not None and self.nodes >= self.node_limit:
            self.stop()
        self.settled = min(self.settled, settled)
        self.worker_of[explorer] = worker
        self.capacity_of[explorer] = max(1, capacity)
        copy = self.active.get(explorer)
        if copy is None:
            left = self.space.empty()
        else:  # a task's first checkpoint takes the copy over (its explorer's earlier task is gone)
            left = copy if generation == 0 else copy.accept(remaining)
        if self.stopping:
            self._hold(explorer, left)
            self.stopped.add(explorer)
            return Reply(Action.STOP, None, self.ub, generation=current)
        if left:
            if self.waiting - {explorer} and not self.pool:
                if capacity > 1 and len(left) > 1:  # many pieces (a GPU's IVMs): give half the work
                    left, half = left.split_half()
                    self.pool.extend(half.pieces())
                elif (cut := left.split_piece(self.min_split)) is not None:
                    left, given = cut
                    self.pool.append(given)
            self._hold(explorer, left)
            hurry = len(self.waiting - {explorer}) > len(self.pool)  # waiters the pool cannot serve
            return Reply(Action.CONTINUE if left == remaining else Action.REPLACE, left, self.ub, hurry, current)
        self._hold(explorer, left)
        if self.pool:
            work = self._take_from_pool(capacity, len(self.waiting - {explorer}))
            self._hold(explorer, work)
            return Reply(Action.REPLACE, work, self.ub, generation=current)
        if self.finished:
            return Reply(Action.STOP, None, self.ub, generation=current)
        self.waiting.add(explorer)
        return Reply(Action.WAIT, None, self.ub, generation=current)

    def _stale(self, explorer: str, current: int) -> Reply:
        """The answer to a report of another generation, which counts for nothing: go on with the
        copy the ledger holds (wait when it holds none; stop when the run stops or is over)."""
        copy = self.active.get(explorer)
        if self.stopping:
            self.stopped.add(explorer)
            return Reply(Action.STOP, None, self.ub, generation=current)
        if copy is not None:
            hurry = len(self.waiting - {explorer}) > len(self.pool)
            return Reply(Action.REPLACE, copy, self.ub, hurry, current)
        return Reply(Action.STOP if self.finished else Action.WAIT, None, self.ub, generation=current)

    def remove_worker(self, worker: str) -> None:
        """A worker is gone: its explorers' work (as of their last checkpoint) returns to the pool,
        and their generations move on (a late report of theirs counts for nothing)."""
        for explorer in [e for e, w in self.worker_of.items() if w == worker]:
            self.generations[explorer] += 1
            copy = self.active.pop(explorer, None)
            if copy is not None:
                self.pool.extend(copy.pieces())
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
    def _hold(self, explorer: str, unit: WorkSet) -> None:
        if unit:
            self.active[explorer] = unit
            self.waiting.discard(explorer)
        else:
            self.active.pop(explorer, None)

    def _take_from_pool(self, capacity: int, others: int) -> WorkSet:
        """Up to ``capacity`` pieces from the pool, leaving one for each of the ``others``
        waiting explorers; a last piece is cut in two while others wait."""
        taken = [self.pool.popleft()]
        while len(taken) < capacity and len(self.pool) > others:
            taken.append(self.pool.popleft())
        if not self.pool and others and (cut := taken[-1].split_piece(self.min_split)) is not None:
            taken[-1], given = cut
            self.pool.append(given)
        return self.space.union(taken)


def _cut(pieces: list[WorkSet], count: int) -> list[WorkSet]:
    """Cut the largest piece in two until there are ``count`` (so every explorer starts at once)."""
    while 0 < len(pieces) < count:
        largest = max(range(len(pieces)), key=lambda i: pieces[i].weight())
        cut = pieces[largest].split_piece(2)
        if cut is None:
            break
        pieces[largest : largest + 1] = list(cut)
    return pieces
