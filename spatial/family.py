"""The spatial family's side of the workflow (``workflow.family``): open boxes as the work, the
resumable exploration as the engine (on the device of a GPU worker), local solves from random
starts as the side heuristic.

Work is a set of boxes with their certified lower bounds (:class:`.boxes.BoxSet`, its wire format
on the wire).  An explorer refines the boxes it was given, so the coordinator accepts its report as
it is (no intersection as for flow shop); what it discarded without splitting to the end (pruned
within the tolerance, cut away, too small to split) goes to the ledger as ``settled``, the lowest
bound of all of it, so that the run's certified lower bound is ``min(settled, every open box's
bound)``.  The work left is measured by volume, as a share of the domain (a side of zero width
counts as 1, as in :meth:`.BoxSet.volume`).

A run's options for engines and heuristics are plain data: ``{"problem": Problem.source,
"minimize": MinimizeOptions fields}``.  Incumbents travel as ``(value, point as a list)``; the
explorers prune with the coordinator's best value (:meth:`.Exploration.prune_at`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .bnb import MinimizeOptions, _Incumbent, _LocalSolver
from .boxes import BoxSet
from .explorer import Exploration
from .problem import Problem

if TYPE_CHECKING:
    from ..gpu.spatial_bnb import GpuExploration


class BoxSpace:
    """The spatial work space (``workflow.family.WorkSpace``): sets of boxes in a domain."""

    kind = "spatial"

    def __init__(self, lower: Iterable[float], upper: Iterable[float]) -> None:
        self.lower = np.asarray(list(lower), dtype=np.float64)
        self.upper = np.asarray(list(upper), dtype=np.float64)
        self.scale = self.upper - self.lower

    def params(self) -> dict:
        return {"lower": self.lower.tolist(), "upper": self.upper.tolist()}

    def empty(self) -> BoxWork:
        return BoxWork(BoxSet.empty(len(self.lower)), self)

    def decode(self, data: bytes) -> BoxWork:
        """The boxes of ``data``; no bytes at all is the empty set (an explorer's first checkpoint)."""
        return BoxWork(BoxSet.from_bytes(data, len(self.lower)), self) if data else self.empty()

    def union(self, sets: Iterable[BoxWork]) -> BoxWork:
        parts = [s.boxes for s in sets]
        return BoxWork(BoxSet.concat(parts), self) if parts else self.empty()

    def remaining_fraction(self, sets: Iterable[BoxWork]) -> float:
        return sum(s.boxes.volume(self.scale) for s in sets)

    def remaining_log10(self, sets: Iterable[BoxWork]) -> float | None:
        sets = list(sets)
        if not any(len(s) for s in sets):
            return None
        return math.log10(max(self.remaining_fraction(sets), math.ulp(0.0)))  # boxes flat in some side: the least

    def lower_bound(self, sets: Iterable[BoxWork]) -> float:
        """The lowest bound of an open box (inf when none is open)."""
        return min((s.boxes.lowest() for s in sets), default=math.inf)


Space = BoxSpace


@dataclass(frozen=True, eq=False)
class BoxWork:
    """A ``BoxSet`` as the coordinator's work set (``workflow.family.WorkSet``)."""

    boxes: BoxSet
    space: BoxSpace

    def __len__(self) -> int:
        return len(self.boxes)

    def to_bytes(self) -> bytes:
        return self.boxes.to_bytes()

    def weight(self) -> float:
        return self.boxes.volume(self.space.scale)

    def split_half(self) -> tuple[BoxWork, BoxWork]:
        kept, given = self.boxes.split(self.space.scale)
        return BoxWork(kept, self.space), BoxWork(given, self.space)

    def split_piece(self, min_split: int) -> tuple[BoxWork, BoxWork] | None:
        """Half of the boxes (alternately by bound), or a single box bisected; None when that
        cannot be done (an empty set, a box too small to split).  ``min_split`` is flow shop's."""
        kept, given = self.split_half()
        return (kept, given) if len(given) else None

    def pieces(self) -> list[BoxWork]:
        b = self.boxes
        return [BoxWork(BoxSet(b.lo[i : i + 1], b.hi[i : i + 1], b.lb[i : i + 1]), self.space) for i in range(len(b))]

    def accept(self, reported: BoxWork) -> BoxWork:
        """The explorer's report as it is: it refines the boxes it was given."""
        return reported


def _problem_and_options(options: dict) -> tuple[Problem, MinimizeOptions]:
    return Problem.from_source(options["problem"]), MinimizeOptions(**options["minimize"])


def run_options(problem: Problem, options: MinimizeOptions) -> dict:
    """The run's options for engines and heuristics (plain data: see the module docstring)."""
    return {"problem": problem.source, "minimize": dataclasses.asdict(options)}


def make_engine(options: dict, *, gpu: bool, threads: int) -> ExplorationEngine:
    """The engine for a worker: on a GPU worker a ``GpuExploration`` (its open boxes stay on the
    device), unless the problem's tape is beyond the kernels' caps; elsewhere, and then, the CPU
    :class:`.Exploration` on the worker's threads."""
    problem, minimize = _problem_and_options(options)
    empty = BoxSet.empty(problem.dimension)
    if gpu:
        from ..gpu.spatial_bnb import GpuExploration  # only GPU workers import numba-cuda's runtime
        from ..gpu.spatial_kernels import TapeTooLarge, check_size

        try:
            check_size(problem.tape)
        except TapeTooLarge:
            pass
        else:
            return ExplorationEngine(GpuExploration(problem, minimize, empty))
    return ExplorationEngine(Exploration(problem, dataclasses.replace(minimize, parallel=threads > 1), empty))


class ExplorationEngine:
    """A resumable exploration (:class:`.Exploration`, or ``GpuExploration`` on a GPU) whose open
    boxes stay in this process, or on its device, between checkpoints."""

    capacity = 1

    def __init__(self, exploration: Exploration | GpuExploration) -> None:
        self.problem = exploration.problem
        self.exploration = exploration
        self.reported = math.inf  # the incumbent value last sent up

    def load(self, data: bytes) -> None:
        self.exploration.replace(BoxSet.from_bytes(data, self.problem.dimension))

    def run(self, ub: float, seconds: float, report, waiting) -> tuple[int, int, tuple[float, list[float]] | None]:
        self.exploration.prune_at(ub)
        result = self.exploration.run(should_stop=waiting, time_limit=seconds)
        self.exploration.settle()  # a report holds no box the run's incumbent prunes
        best = None
        if result.objective is not None and result.objective < self.reported:
            best = (result.objective, result.x)
            self.reported = result.objective
        return result.nodes, 0, best

    def remaining(self) -> bytes:
        return self.exploration.remaining().to_bytes()

    def extras(self) -> dict:
        e = self.exploration
        return {"settled": min(e.settled_lb, e.unsplittable_lb)}


def side_heuristic(options: dict, seed: int, improved: Callable[[float, list[float]], None],
                   stopping: Callable[[], bool]) -> dict:  # fmt: skip
    """Local solves (SLSQP) from uniform random starts in the domain until ``stopping()``; every
    rigorously verified improvement goes to ``improved(value, point)``."""
    problem, minimize = _problem_and_options(options)
    incumbent = _Incumbent(problem, minimize.feas_tol)
    local = _LocalSolver(problem, incumbent)
    rng = np.random.default_rng(seed)
    while not stopping():
        before = incumbent.value
        local.run(rng.uniform(problem.lower, problem.upper))
        if incumbent.value < before:
            improved(incumbent.value, incumbent.x.tolist())
    return {"objective": None if incumbent.x is None else incumbent.value, "local_solves": local.count}
