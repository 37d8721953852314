"""The flow-shop family's side of the workflow (``workflow.family``): its work space, its
explorer engines and its side heuristic.

An engine explores a work unit held in its process between checkpoints: on a worker with the
resource ``GPU`` a ``GpuExplorer`` (K IVMs kept on the device, improvements sent up as soon as a
launch finds them), elsewhere the threaded CPU explorer with a thread per worker thread.  The
side heuristic is iterated greedy, beside the search until the run stops.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..flowshop.iterated_greedy import iterated_greedy
from .explorer import explore
from .intervals import WorkUnit
from .packed import PackedUnit, PermutationSpace

Space = PermutationSpace
CHUNK_SECONDS = 0.02  # explorer threads share the GIL with the worker's own threads: visit Python less
PROGRESS_SECONDS = 0.2  # how often the CPU explorer looks whether others wait, and then checkpoints early


def make_engine(options: dict, *, gpu: bool, threads: int) -> CpuEngine | GpuEngine:
    """The engine for a worker: ``options`` are the run's (``p``, ``bound``, ``branch``, ``ivms``)."""
    p, bound, branch = options["p"], options["bound"], options["branch"]
    return GpuEngine(p, bound, branch, options["ivms"]) if gpu else CpuEngine(p, bound, branch, threads)


class CpuEngine:
    """The threaded IVM explorer on a work unit held in this process (its improvements go up
    with the checkpoint that ends each run, at most a budget later, so ``report`` is unused)."""

    def __init__(self, p: np.ndarray, bound: str, branch: str, threads: int) -> None:
        self.p, self.bound, self.branch, self.capacity = p, bound, branch, threads
        self.unit = WorkUnit.empty(p.shape[0])

    def load(self, data: bytes) -> None:
        self.unit = WorkUnit.from_bytes(self.p.shape[0], data)

    def run(self, ub: int, seconds: float, report, waiting) -> tuple[int, int, tuple[int, list[int]] | None]:
        result = explore(self.p, self.unit, ub, bound=self.bound, branch=self.branch, threads=self.capacity,
                         max_seconds=seconds, chunk_seconds=CHUNK_SECONDS, progress_every=PROGRESS_SECONDS,
                         on_progress=lambda snapshot: waiting())  # fmt: skip
        self.unit = result.remaining
        best = None
        if result.best_makespan is not None:
            best = (result.best_makespan, [int(j) for j in result.best_permutation])
        return result.nodes, result.leaves, best

    def remaining(self) -> bytes:
        return self.unit.to_bytes()

    def extras(self) -> dict:
        return {}


class GpuEngine:
    """A ``GpuExplorer`` whose IVMs stay on the device from one checkpoint to the next."""

    def __init__(self, p: np.ndarray, bound: str, branch: str, ivms: int) -> None:
        from ..gpu.explorer import GpuExplorer  # only GPU workers import numba-cuda's runtime

        self.n = p.shape[0]
        self.gpu = GpuExplorer(p, ivms=ivms, bound=bound, branch=branch)
        self.capacity = ivms

    def load(self, data: bytes) -> None:
        self.gpu.load(PackedUnit.from_bytes(self.n, data))

    def run(self, ub: int, seconds: float, report, waiting) -> tuple[int, int, tuple[int, list[int]] | None]:
        sent = ub

        def on_launch(nodes: int, leaves: int, current: int) -> bool:
            nonlocal sent
            if current < sent:  # a better schedule: up to the coordinator at once
                makespan, permutation = self.gpu.best()
                report(makespan, [int(j) for j in permutation])
                sent = makespan
            return waiting()  # others idle: checkpoint now, so that they get half of ours

        counts = self.gpu.run(ub, max_seconds=seconds, on_launch=on_launch)
        best = self.gpu.best()
        return counts.nodes, counts.leaves, None if best is None else (best[0], [int(j) for j in best[1]])

    def remaining(self) -> bytes:
        return self.gpu.remaining().to_bytes()

    def extras(self) -> dict:
        return {}


def side_heuristic(options: dict, seed: int, improved: Callable[[int, list[int]], None],
                   stopping: Callable[[], bool]) -> dict:  # fmt: skip
    """Iterated greedy on the run's instance until ``stopping()``; every improvement goes to ``improved``."""

    def on_improvement(makespan: int, permutation: np.ndarray) -> None:
        improved(makespan, [int(j) for j in permutation])

    result = iterated_greedy(options["p"], seconds=math.inf, seed=seed, on_improvement=on_improvement,
                             should_stop=stopping)  # fmt: skip
    return {"makespan": result.makespan, "iterations": result.iterations}
