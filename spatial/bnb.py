"""Best-first spatial branch-and-bound on the CPU, with subdomain lower bounds.

Each B&B node is a box.  Its lower bound is the seed paper's subdomain lower bound
(:func:`.bounds.bound_boxes`: the box split into ``N^d`` subdomains, each bounded by NIE, MVF or
both, the min over those not proved infeasible).  The open box with the lowest bound is bisected
across its widest side (relative to the domain), and its children are bounded together.  Boxes
whose bound reaches ``UB - max(eps_abs, eps_rel |UB|)`` are pruned; the search ends when none is
left below that level (``optimal``), when every box was proved infeasible (``infeasible``), or at a
limit (``limit``). A threshold question (``MinimizeOptions.prove_above``: f >= C everywhere?) prunes
at C instead and ends ``decided`` as soon as it is answered (:func:`.options.prune_level`).

Upper bounds come only from points checked rigorously (:func:`.bounds.evaluate_point`): the
objective's enclosure's upper end, at a point whose inequalities' enclosures are <= 0 and whose
equalities' lie within ``feas_tol``.  Candidates are the first incumbents tried before the first split (:mod:`.first`: the domain's
centre and a grid, and local solves from the best of them), each bounded box's best subdomain midpoint
and local solves (scipy SLSQP, analytic gradients) started from the best box bounded, one per
``LOCAL_EVERY_SUBDOMAINS`` subdomains (a schedule by work done, not by time, so that a run repeats); a local optimum that sits on an
inequality is pulled inside it by a small margin until it verifies.

Memory is bounded: above ``max_open`` open boxes the search dives (depth first from the box it
took) until the dive is done, then goes on best first.  The certified lower bound is the min of
the open boxes' bounds and of the bounds of the boxes pruned on the way.

The search itself is :class:`.explorer.Exploration` (resumable, shareable); its options, rules and
the incumbent are in :mod:`.options`, the local solver in :mod:`.local`; this module holds
``minimize``, which runs one over the whole domain, its result, and the loading of its code.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from ..core.compiling import in_cache, recording, start_apart, wait_apart
from ..core.progress import Progress
from ..core.result import Result, Status
from .bounds import Mode, bound_boxes, evaluate_point
from .boxes import BoxSet
from .contract import contract_boxes
from .defaults import FEAS_TOL
from .explorer import Exploration
from .local import _LocalSolver
from .network import NetworkObjective
from .network_bounds import NetworkBounds
from .options import BOUNDS, MinimizeOptions, _Incumbent
from .problem import Problem
from .result import box_result
from .second_order import second_order_bounds


def result_status(unsplittable: int, found: bool, lower_bound: float) -> Status:
    """The status of a search that ran to its end: ``limit`` while boxes too small to split stay
    open or the bound is -inf, ``infeasible`` when nothing was found and the bound is +inf."""
    if unsplittable:
        return Status.LIMIT
    if not found:
        return Status.INFEASIBLE if lower_bound == math.inf else Status.LIMIT
    return Status.OPTIMAL if lower_bound > -math.inf else Status.LIMIT


def make_result(
    problem: Problem,
    options: MinimizeOptions,
    incumbent: _Incumbent,
    local: _LocalSolver | None,
    status: Status | None,
    unsplittable: int,
    lower_bound: float,
    nodes: int,
    subdomains: int,
    began: float,
    open_boxes: int,
    remaining: BoxSet,
    **details,
) -> Result:
    """The result of a search (CPU or GPU) that ended with ``status`` (None: ran to its end, see
    :func:`result_status`) leaving the boxes ``remaining``; ``details`` (the backend and its
    counters) join its extras."""
    elapsed_s = time.perf_counter() - began
    found = incumbent.x is not None
    return box_result(
        problem,
        options,
        status or result_status(unsplittable, found, lower_bound),
        incumbent.value if found else None,
        incumbent.x.tolist() if found else None,
        lower_bound,
        nodes,
        elapsed_s,
        remaining,
        open_boxes,
        subdomains=subdomains,
        local_solves=0 if local is None else local.count,
        local_solve_s=round(0.0 if local is None else local.seconds, 6),
        **details,
    )


# what a first run compiles, and about how long that takes (measured: benchmarks/first_run.py)
FIRST_RUN = ("the continuous solver", "40 s on 2 cores")


def load_code(problem: Problem, options: MinimizeOptions | None = None) -> tuple[float, bool]:
    """Load (or compile, the first time on a machine) the numba code ``minimize`` runs for
    ``problem``: (seconds, whether anything was compiled).  Called before ``minimize``, it keeps
    compilation out of the search's time.  On a first run (:func:`code_cached` false) the body of
    the subdomain bounds compiles in a process of their own beside the rest here; the parallel form
    of the bounds then loads it from numba's cache."""
    options = options or MinimizeOptions()
    with recording() as outcome:
        apart = None if code_cached(options) else start_apart(f"{__name__}:compile_bounds")
        lo, hi = problem.lower[None, :].copy(), problem.upper[None, :].copy()
        if options.contract:
            contract_boxes(problem.tape, lo, hi, math.inf, options.feas_tol)
        load_host_code(problem, options)
        wait_apart(apart)
        bound_boxes(problem.tape, lo, hi, 1, int(BOUNDS[options.bound]), options.feas_tol, options.parallel)
        if options.second_order:
            second_order_bounds(problem.tape, lo, hi, 0.5 * (lo + hi)[:, None, :])
        objective = NetworkObjective.of(problem)
        if objective is not None:
            NetworkBounds(objective.network).objective_bound(objective, problem.lower, problem.upper)
    return outcome["seconds"], outcome["compiled"]


def code_cached(options: MinimizeOptions) -> bool:
    """Whether numba's on-disk cache holds the CPU code ``minimize`` runs with ``options`` (False:
    this is the machine's first run, or its first since an upgrade)."""
    from . import bounds, contract, floateval, second_order

    code = [bounds._bound_work_items_parallel if options.parallel else bounds._bound_work_items, bounds._point_outputs]
    if options.second_order:
        code.append(second_order._box_bounds)
    if options.contract:
        code.append(contract._contract_boxes)
    if options.local_solves:
        code.append(floateval._outputs_and_jacobian)
    return in_cache(*code)


def compile_bounds() -> None:
    """A job of ``core.compiling.start_apart``: compile the subdomain bounds' body and the
    second-order bound (26 s on a loaded 2-core machine) into numba's cache, on a tape of one
    variable (every problem's tape has the same numba types)."""
    from .tape import Op, TapeBuilder

    builder = TapeBuilder(1)
    x = builder.var(0)
    tape = builder.build(builder.binary(Op.MUL, x, x))
    bound_boxes(tape, np.zeros((1, 1)), np.ones((1, 1)), 1, int(Mode.BOTH), MinimizeOptions().feas_tol, False)
    second_order_bounds(tape, np.zeros((1, 1)), np.ones((1, 1)), np.full((1, 1, 1), 0.5))


def load_host_code(problem: Problem, options: MinimizeOptions) -> None:
    """Load (or compile) what both backends run on the host: the rigorous point evaluation and,
    with local solves, scipy and the float evaluators."""
    evaluate_point(problem.tape, problem.lower)
    if options.local_solves:
        load_float_code(problem)


def load_float_code(problem: Problem) -> None:
    """Load (or compile) what local solves run: scipy and the float evaluators."""
    import scipy.optimize  # noqa: F401 (its import, 0.1 s, is not the search's)

    from .floateval import evaluate_float, evaluate_float_gradients

    evaluate_float(problem.tape, problem.lower)
    evaluate_float_gradients(problem.tape, problem.lower)
    local = _LocalSolver(problem, _Incumbent(problem, FEAS_TOL))  # its kinks' slots, found at its start
    local.gradients(problem.lower)  # a network objective's are its layers'
    if local.kink_arguments is not None:
        local.kink_arguments(problem.lower)


def minimize(
    problem: Problem,
    options: MinimizeOptions | None = None,
    *,
    progress: Callable[[Progress], None] | None = None,
    progress_seconds: float = 0.5,
    should_stop: Callable[[], bool] | None = None,
) -> Result:
    """Minimize ``problem`` by spatial B&B on the CPU: an :class:`.explorer.Exploration` of the
    whole domain run to its end or to a limit; see the module docstring."""
    options = options or MinimizeOptions()
    began = time.perf_counter()
    exploration = Exploration(problem, options)
    return run_to_end(exploration, began, should_stop, progress, progress_seconds, lambda: {"backend": "cpu"})


def run_to_end(
    exploration,
    began: float,
    should_stop: Callable[[], bool] | None,
    progress: Callable[[Progress], None] | None,
    progress_seconds: float,
    details: Callable[[], dict],
) -> Result:
    """Run an exploration of the whole domain (CPU or GPU), made at ``began``, to its end or to its
    options' limits (counted from ``began``), as ``minimize``'s result (``details()``: the backend's,
    read after the run)."""
    problem, options = exploration.problem, exploration.options
    time_limit = None if options.time_limit is None else options.time_limit - (time.perf_counter() - began)
    node_limit = None if options.node_limit is None else options.node_limit - exploration.nodes
    report = exploration.run(should_stop, time_limit, node_limit, progress=progress, progress_seconds=progress_seconds)
    return make_result(
        problem,
        options,
        exploration.incumbent,
        exploration.local,
        None if report.done else Status.LIMIT,
        report.unsplittable,
        report.lower_bound,
        report.total_nodes,
        exploration.subdomains_per_box,
        began,
        report.open_boxes + report.unsplittable,
        _left(exploration),
        **details(),
    )


def _left(exploration) -> BoxSet:
    """The open boxes of ``exploration`` below its prune level: the work it left."""
    boxes = exploration.remaining()
    below = boxes.lb < exploration.level
    return BoxSet(boxes.lo[below], boxes.hi[below], boxes.lb[below])
