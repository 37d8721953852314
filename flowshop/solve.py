"""Solve a flow-shop instance in this process: NEH incumbent, then the threaded IVM search."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from ..core.status import BOUND_PROVED, LIMIT, OPTIMAL
from .bounds import lower_bound
from .evaluation import makespan, neh
from .instance import FlowShop
from .explorer import Snapshot, explore
from .intervals import WorkUnit


@dataclass(frozen=True)
class SolveResult:
    """The outcome of a solve, with the fields of ``pbbflow solve --json``."""

    instance: str
    n: int
    m: int
    status: str
    makespan: int | None
    permutation: list[int] | None
    lower_bound: int
    nodes: int
    leaves: int
    elapsed_s: float
    remaining_fraction: float
    remaining_log10: float | None  # log10 of the share left (None when nothing is): readable when tiny

    def to_dict(self) -> dict:
        return asdict(self)


def solve(
    instance: FlowShop,
    *,
    ub: int | None = None,
    use_neh: bool = True,
    bound: str = "lb1",
    branch: str = "minmin",
    threads: int = 1,
    time_limit: float | None = None,
    node_limit: int | None = None,
    on_progress: Callable[[Snapshot], None] | None = None,
) -> SolveResult:
    """Prove an optimal schedule (or that none beats ``ub``), within the limits given.

    The search looks for schedules strictly better than the incumbent, which starts at
    min(``ub``, NEH).  ``status`` is ``optimal`` when the search finished holding a
    schedule no worse than that start, ``bound_proved`` when it finished with nothing
    below a user ``ub`` that NEH did not reach, ``limit`` otherwise.
    """
    p = instance.p
    best_makespan: int | None = None
    best_permutation: np.ndarray | None = None
    if use_neh:
        best_makespan, best_permutation = neh(p)
    known = [v for v in (ub, best_makespan) if v is not None]
    search_ub = min(known) if known else int(p.sum()) + 1  # every schedule beats sum + 1
    result = explore(
        p, WorkUnit.full(instance.n), search_ub, bound=bound, branch=branch, threads=threads,
        max_nodes=node_limit, max_seconds=time_limit, on_progress=on_progress,
    )  # fmt: skip
    if result.best_makespan is not None:
        best_makespan, best_permutation = result.best_makespan, result.best_permutation
        if makespan(p, best_permutation) != best_makespan:
            raise RuntimeError("internal error: the schedule found does not have the reported makespan")
    status, proved = classify(not result.remaining, best_makespan, search_ub, lower_bound(p, [], [], bound))
    return SolveResult(
        instance=instance.name,
        n=instance.n,
        m=instance.m,
        status=status,
        makespan=best_makespan,
        permutation=None if best_permutation is None else [int(j) for j in best_permutation],
        lower_bound=proved,
        nodes=result.nodes,
        leaves=result.leaves,
        elapsed_s=round(result.elapsed_s, 6),
        remaining_fraction=result.remaining.fraction_of_space(),
        remaining_log10=result.remaining.log10_fraction(),
    )


def classify(finished: bool, best_makespan: int | None, search_ub: int, root_bound: int) -> tuple[str, int]:
    """Status and proved lower bound of a search that pruned with ``search_ub`` from the start.

    Finished with a schedule no worse than ``search_ub``: optimal.  Finished otherwise: no
    schedule beats ``search_ub``.  Not finished: only the root bound is proved.
    """
    if not finished:
        return LIMIT, root_bound
    if best_makespan is not None and best_makespan <= search_ub:
        return OPTIMAL, best_makespan
    return BOUND_PROVED, max(search_ub, root_bound)
