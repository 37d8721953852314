"""The tasks that run on Dask workers: explorers, and iterated greedy beside them.

It explores its work unit for a time budget (cut short when other explorers wait for work:
it asks the coordinator every 0.2 s), checkpoints to the coordinator, and does what the
answer says.  On a worker with the resource ``GPU`` it drives a ``GpuExplorer`` (K IVMs
kept on the device between checkpoints, improvements sent up as soon as a launch finds
them); elsewhere the threaded CPU explorer with a thread per worker thread.  It holds no
state the coordinator does not have (as of the last checkpoint), so a re-run after a
worker death is harmless: it starts empty and asks for work.
"""

from __future__ import annotations

import functools
import math
import time
import traceback

import numpy as np
from distributed import get_worker
from distributed.utils import sync

from ..flowshop.iterated_greedy import iterated_greedy
from ..gpu import GpuError
from ..search.explorer import explore
from ..search.intervals import WorkUnit
from ..search.packed import PackedUnit
from .ledger import REPLACE, STOP, WAIT

WAIT_SECONDS = 0.05  # between checkpoints of an explorer that has nothing to do
HURRY = 0.05  # fraction of the budget to explore before the next checkpoint when others wait
CHUNK_SECONDS = 0.02  # explorer threads share the GIL with the worker's own threads: visit Python less
POLL_SECONDS = 0.2  # an explorer asks this often whether others wait, and then checkpoints early


class _CpuEngine:
    """The threaded IVM explorer on a work unit held in this process (its improvements go up
    with the checkpoint that ends each run, at most a budget later, so ``report`` is unused)."""

    def __init__(self, p: np.ndarray, bound: str, branch: str, threads: int) -> None:
        self.p, self.bound, self.branch, self.capacity = p, bound, branch, threads
        self.unit = WorkUnit.empty(p.shape[0])

    def load(self, data: bytes) -> None:
        self.unit = WorkUnit.from_bytes(self.p.shape[0], data)

    def run(self, ub: int, seconds: float, report, waiting) -> tuple[int, int, tuple[int, list[int]] | None]:
        result = explore(self.p, self.unit, ub, bound=self.bound, branch=self.branch, threads=self.capacity,
                         max_seconds=seconds, chunk_seconds=CHUNK_SECONDS, progress_every=POLL_SECONDS,
                         on_progress=lambda snapshot: waiting())  # fmt: skip
        self.unit = result.remaining
        best = None
        if result.best_makespan is not None:
            best = (result.best_makespan, [int(j) for j in result.best_permutation])
        return result.nodes, result.leaves, best

    def remaining(self) -> bytes:
        return self.unit.to_bytes()


class _GpuEngine:
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
        next_poll = time.monotonic() + POLL_SECONDS

        def on_launch(nodes: int, leaves: int, current: int) -> bool:
            nonlocal sent, next_poll
            if current < sent:  # a better schedule: up to the coordinator at once
                makespan, permutation = self.gpu.best()
                report(makespan, [int(j) for j in permutation])
                sent = makespan
            if time.monotonic() >= next_poll:  # others idle: checkpoint now, so that they get half of ours
                next_poll = time.monotonic() + POLL_SECONDS
                return waiting()
            return False

        counts = self.gpu.run(ub, max_seconds=seconds, on_launch=on_launch)
        best = self.gpu.best()
        return counts.nodes, counts.leaves, None if best is None else (best[0], [int(j) for j in best[1]])

    def remaining(self) -> bytes:
        return self.gpu.remaining().to_bytes()


def _reporting_errors(task):
    """``task``, returning ``{"error": one line, "traceback": text}`` instead of raising an internal
    error, so that the driver reports it once (and checkpoints) instead of the worker logging it.
    A ``GpuError`` (a GPU that cannot serve the run as asked: the user's to fix) is raised as it is."""

    @functools.wraps(task)
    def wrapper(*args, **kwargs) -> dict:
        try:
            return task(*args, **kwargs)
        except GpuError:
            raise
        except Exception as error:  # noqa: BLE001 (every internal failure goes to the driver)
            return {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}

    return wrapper


@_reporting_errors
def explorer_task(run: str, explorer: str, p: np.ndarray, bound: str, branch: str, budget_s: float,
                  ivms: int) -> dict:  # fmt: skip
    """Explore for the coordinator until it says stop (on the GPU of a worker with resource GPU)."""
    worker = get_worker()
    if worker.state.total_resources.get("GPU", 0) > 0:
        engine = _GpuEngine(p, bound, branch, ivms)
    else:
        engine = _CpuEngine(p, bound, branch, worker.state.nthreads)

    def call(handler: str, **kwargs) -> dict:
        return sync(worker.loop, getattr(worker.scheduler, handler), run=run, **kwargs)

    def checkpoint(remaining: bytes, **progress) -> dict:
        return call("pbbflow_checkpoint", explorer=explorer, worker=worker.address, remaining=remaining,
                    capacity=engine.capacity, **progress)  # fmt: skip

    def report(makespan: int, permutation: list[int]) -> None:
        call("pbbflow_improve", best=makespan, solution=permutation)

    def waiting() -> bool:
        return call("pbbflow_waiting", explorer=explorer)["waiting"] > 0

    totals = {"nodes": 0, "leaves": 0, "explorations": 0}
    reply = checkpoint(b"")
    while reply["action"] != STOP:
        if reply["action"] == WAIT:
            time.sleep(WAIT_SECONDS)
            reply = checkpoint(engine.remaining())
            continue
        if reply["action"] == REPLACE:
            engine.load(reply["work"])
        budget = budget_s * HURRY if reply["hurry"] else budget_s
        nodes, leaves, best = engine.run(reply["ub"], budget, report, waiting)
        totals["nodes"] += nodes
        totals["leaves"] += leaves
        totals["explorations"] += 1
        improvement = {} if best is None else {"best": best[0], "solution": best[1]}
        reply = checkpoint(engine.remaining(), nodes=nodes, leaves=leaves, **improvement)
    return totals


@_reporting_errors
def heuristic_task(run: str, p: np.ndarray, seed: int) -> dict:
    """Iterated greedy beside the search until the run stops; every improvement goes to the
    coordinator at once (it forwards the new UB to the explorers at their next checkpoint)."""
    worker = get_worker()
    next_poll = 0.0

    def call(handler: str, **kwargs) -> dict:
        return sync(worker.loop, getattr(worker.scheduler, handler), run=run, **kwargs)

    def improved(makespan: int, permutation: np.ndarray) -> None:
        call("pbbflow_improve", best=makespan, solution=[int(j) for j in permutation])

    def stopping() -> bool:
        nonlocal next_poll
        if time.monotonic() < next_poll:
            return False
        next_poll = time.monotonic() + POLL_SECONDS
        return call("pbbflow_status")["stopping"]

    result = iterated_greedy(p, seconds=math.inf, seed=seed, on_improvement=improved, should_stop=stopping)
    return {"makespan": result.makespan, "iterations": result.iterations}
