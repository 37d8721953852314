"""Solve a flow-shop instance in this process: NEH incumbent, then the threaded IVM search."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..core.progress import Progress
from ..core.result import Result, Status
from .bounds import lower_bound
from .choices import DEFAULT_BOUND, DEFAULT_BRANCH
from .describe import result_fields
from .evaluation import makespan, neh
from .explorer import Snapshot, explore
from .instance import FlowShop
from .intervals import WorkUnit


def flowshop_result(
    instance: str,
    n: int,
    m: int,
    status: Status,
    best_makespan: int | None,
    permutation,
    lower_bound: int,
    nodes: int,
    leaves: int,
    elapsed_s: float,
    remaining: WorkUnit,
) -> Result:
    """The :class:`Result` of a flow-shop search that left ``remaining``."""
    return Result(
        kind="flowshop",
        name=instance,
        status=status,
        value=best_makespan,
        solution=None if permutation is None else [int(j) for j in permutation],
        lower_bound=lower_bound,
        nodes=nodes,
        elapsed_s=round(elapsed_s, 6),
        remaining_fraction=remaining.fraction_of_space(),
        remaining_log10=remaining.log10_fraction(),
        extras={"n": n, "m": m, "leaves": leaves},
        fields=result_fields,
    )


def solve(
    instance: FlowShop,
    *,
    ub: int | None = None,
    use_neh: bool = True,
    bound: str = DEFAULT_BOUND,
    branch: str = DEFAULT_BRANCH,
    threads: int = 1,
    time_limit: float | None = None,
    node_limit: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> Result:
    """Prove an optimal schedule (or that none beats ``ub``), within the limits given.

    The search looks for schedules strictly better than the incumbent, which starts at
    min(``ub``, NEH).  ``status`` is ``optimal`` when the search finished holding a
    schedule no worse than that start, ``bound_proved`` when it finished with nothing
    below a user ``ub`` that NEH did not reach, ``limit`` otherwise.  ``on_progress`` gets the
    search's progress every second (the share left is not counted: NaN).
    """
    p = instance.p
    best_makespan: int | None = None
    best_permutation: np.ndarray | None = None
    if use_neh:
        best_makespan, best_permutation = neh(p)
    known = [v for v in (ub, best_makespan) if v is not None]
    search_ub = min(known) if known else int(p.sum()) + 1  # every schedule beats sum + 1
    result = explore(
        p,
        WorkUnit.full(instance.n),
        search_ub,
        bound=bound,
        branch=branch,
        threads=threads,
        max_nodes=node_limit,
        max_seconds=time_limit,
        on_progress=None if on_progress is None else _reported(on_progress, threads),
    )
    if result.best_makespan is not None:
        best_makespan, best_permutation = result.best_makespan, result.best_permutation
        if makespan(p, best_permutation) != best_makespan:
            raise RuntimeError("internal error: the schedule found does not have the reported makespan")
    status, proved = classify(not result.remaining, best_makespan, search_ub, lower_bound(p, [], [], bound))
    return flowshop_result(
        instance.name,
        instance.n,
        instance.m,
        status,
        best_makespan,
        best_permutation,
        proved,
        result.nodes,
        result.leaves,
        result.elapsed_s,
        result.remaining,
    )


def _reported(on_progress: Callable[[Progress], None], threads: int) -> Callable[[Snapshot], None]:
    """The exploration's counters (``Snapshot``) as progress for ``on_progress``."""

    def report(snapshot: Snapshot) -> None:
        rate = snapshot.nodes / snapshot.elapsed_s if snapshot.elapsed_s > 0 else 0.0
        leaves = {"leaves": snapshot.leaves}
        on_progress(
            Progress(snapshot.elapsed_s, snapshot.nodes, rate, snapshot.ub, math.nan, None, threads, extras=leaves)
        )

    return report


def classify(finished: bool, best_makespan: int | None, search_ub: int, root_bound: int) -> tuple[Status, int]:
    """Status and proved lower bound of a search that pruned with ``search_ub`` from the start.

    Finished with a schedule no worse than ``search_ub``: optimal.  Finished otherwise: no
    schedule beats ``search_ub``.  Not finished: only the root bound is proved.
    """
    if not finished:
        return Status.LIMIT, root_bound
    if best_makespan is not None and best_makespan <= search_ub:
        return Status.OPTIMAL, best_makespan
    return Status.BOUND_PROVED, max(search_ub, root_bound)
