"""The explorer task that runs on a Dask worker.

It explores its work unit with the threaded IVM explorer for a time budget, checkpoints
to the coordinator, and does what the answer says.  It holds no state the coordinator
does not have (as of the last checkpoint), so a re-run after a worker death is harmless:
it starts empty and asks for work.
"""

from __future__ import annotations

import time

import numpy as np
from distributed import get_worker
from distributed.utils import sync

from ..search.explorer import explore
from ..search.intervals import WorkUnit
from .ledger import REPLACE, STOP, WAIT

WAIT_SECONDS = 0.05  # between checkpoints of an explorer that has nothing to do
HURRY = 0.05  # fraction of the budget to explore before the next checkpoint when others wait
CHUNK_SECONDS = 0.02  # explorer threads share the GIL with the worker's own threads: visit Python less


def explorer_task(run: str, explorer: str, p: np.ndarray, bound: str, branch: str, budget_s: float) -> dict:
    """Explore for the coordinator until it says stop, on as many threads as the worker has."""
    worker = get_worker()
    threads = worker.state.nthreads
    n = p.shape[0]

    def checkpoint(unit: WorkUnit, **progress) -> dict:
        return sync(worker.loop, worker.scheduler.pbbflow_checkpoint, run=run, explorer=explorer,
                    worker=worker.address, remaining=unit.to_bytes(), capacity=threads, **progress)  # fmt: skip

    unit = WorkUnit.empty(n)
    totals = {"nodes": 0, "leaves": 0, "explorations": 0}
    reply = checkpoint(unit)
    while reply["action"] != STOP:
        if reply["action"] == WAIT:
            time.sleep(WAIT_SECONDS)
            reply = checkpoint(unit)
            continue
        if reply["action"] == REPLACE:
            unit = WorkUnit.from_bytes(n, reply["work"])
        budget = budget_s * HURRY if reply["hurry"] else budget_s
        result = explore(p, unit, reply["ub"], bound=bound, branch=branch, threads=threads, max_seconds=budget,
                         chunk_seconds=CHUNK_SECONDS)  # fmt: skip
        unit = result.remaining
        totals["nodes"] += result.nodes
        totals["leaves"] += result.leaves
        totals["explorations"] += 1
        best = {}
        if result.best_makespan is not None:
            best = {"best": result.best_makespan, "permutation": [int(j) for j in result.best_permutation]}
        reply = checkpoint(unit, nodes=result.nodes, leaves=result.leaves, **best)
    return totals
