"""A spatial search's :class:`~pbbflow.core.result.Result`, as ``minimize`` (:mod:`.bnb`) and a run
(:mod:`.family`) both give it."""

from __future__ import annotations

from ..core.result import Result, Status
from .boxes import BoxSet
from .describe import result_fields
from .options import MinimizeOptions, threshold_answer
from .problem import Problem
from .work import BoxSpace, BoxWork

# a search's own counters: every spatial result names them all, null where its search has none (the
# GPU's on the CPU; a run, whose explorers' are not gathered), so that ``--json`` has one set of keys
COUNTERS = ("subdomains", "local_solves", "local_solve_s", "backend", "phases", "reserve_spills", "device_wait_s")


def box_result(
    problem: Problem,
    options: MinimizeOptions,
    status: Status,
    value: float | None,
    x: list[float] | None,
    lower_bound: float,
    nodes: int,
    elapsed_s: float,
    remaining: BoxSet,
    open_boxes: int,
    **counters,
) -> Result:
    """The :class:`Result` of a spatial search (``minimize`` or a run) with ``options`` that left
    the boxes ``remaining`` (``open_boxes`` of them counted open); ``counters``: those of
    :data:`COUNTERS` the search has. With a threshold question (``options.prove_above``) the status
    is ``decided`` once it is answered (the extras' ``threshold``), else ``limit``."""
    threshold = threshold_answer(options, value, lower_bound)
    if threshold is not None:
        status = Status.LIMIT if threshold["holds"] is None else Status.DECIDED
    space = BoxSpace(problem.lower, problem.upper)
    work = [BoxWork(remaining, space)]
    return Result(
        kind="spatial",
        name=problem.name,
        status=status,
        value=value,
        solution=x,
        lower_bound=float(lower_bound),
        nodes=nodes,
        elapsed_s=round(elapsed_s, 6),
        remaining_fraction=space.remaining_fraction(work),
        remaining_log10=space.remaining_log10(work),
        extras={
            "dimension": problem.dimension,
            "open_boxes": open_boxes,
            **dict.fromkeys(COUNTERS),
            **counters,
            "feas_tol": options.feas_tol,
            "bound": options.bound,
            "eps_abs": options.eps_abs,
            "eps_rel": options.eps_rel,
            "contract": options.contract,
            "threshold": threshold,
            "maximized": problem.maximized,
        },
        fields=result_fields,
    )
