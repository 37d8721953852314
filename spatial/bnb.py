"""Best-first spatial branch-and-bound on the CPU, with subdomain lower bounds.

Each B&B node is a box.  Its lower bound is the seed paper's subdomain lower bound
(:func:`.bounds.bound_boxes`: the box split into ``N^d`` subdomains, each bounded by NIE, MVF or
both, the min over those not proved infeasible).  The open box with the lowest bound is bisected
across its widest side (relative to the domain), and its children are bounded together.  Boxes
whose bound reaches ``UB - max(eps_abs, eps_rel |UB|)`` are pruned; the search ends when none is
left below that level (``optimal``), when every box was proved infeasible (``infeasible``), or at a
limit (``limit``).

Upper bounds come only from points checked rigorously (:func:`.bounds.evaluate_point`): the
objective's enclosure's upper end, at a point whose inequalities' enclosures are <= 0 and whose
equalities' lie within ``feas_tol``.  Candidates are each bounded box's best subdomain midpoint
and local solves (scipy SLSQP, analytic gradients) started from the best box bounded, one per
``LOCAL_EVERY_SUBDOMAINS`` subdomains (a schedule by work done, not by time, so that a run repeats); a local optimum that sits on an
inequality is pulled inside it by a small margin until it verifies.

Memory is bounded: above ``max_open`` open boxes the search dives (depth first from the box it
took) until the dive is done, then goes on best first.  The certified lower bound is the min of
the open boxes' bounds and of the bounds of the boxes pruned on the way.

The search itself is :class:`.explorer.Exploration` (resumable, shareable); this module holds its
options, rules and parts (the incumbent, the local solver) and ``minimize``, which runs one over
the whole domain.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..core.compiling import in_cache, recording, start_apart, wait_apart
from .bounds import Mode, bound_boxes, evaluate_point, feasible_values, is_feasible
from .contract import contract_boxes
from .problem import Problem

BOUNDS = {"nie": Mode.NIE, "mvf": Mode.MVF, "both": Mode.BOTH}
# Subdomains per box on the CPU.  The seed paper's 1,024 suits a GPU; on the CPU, over the 15 problem
# files and the peaks ANN (one thread; benchmarks/spatial_budgets.py), every budget proves all of them,
# in 0.44 s (16), 0.36 s (64), 0.58 s (256) and 0.96 s (1,024) in all.
STATUSES = ("optimal", "infeasible", "limit")
BATCH_SUBDOMAINS = 4096  # subdomains bounded per call at least (several boxes when N^d is small)
LOCAL_EVERY_SUBDOMAINS = 16384  # a local solve per this many subdomains bounded (a fixed schedule: runs repeat)
INWARD_MARGINS = (0.0, 1e-10, 1e-8, 1e-6)  # how far a local optimum is pulled inside its inequalities
RESTORE_STEPS = 3  # Newton steps onto the margin, where SLSQP's own pull leaves a point that does not verify


@dataclass(frozen=True)
class MinimizeOptions:
    """What ``minimize`` proves and how (defaults as ``pbbflow minimize``)."""

    eps_abs: float = 1e-6
    eps_rel: float = 1e-6
    feas_tol: float = 1e-6
    subdomains: int = 64  # per box: N = the largest integer with N^d <= this (the note at BOUNDS)
    bound: str = "both"
    time_limit: float | None = None
    node_limit: int | None = None
    parallel: bool = True
    max_open: int = 1_000_000
    local_solves: bool = True
    contract: bool = True  # narrow each box by constraint propagation (FBBT) before bounding it

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS:
            raise ValueError(f"bound must be one of {', '.join(BOUNDS)}, not {self.bound!r}")
        for name in ("eps_abs", "eps_rel", "feas_tol"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")
        if self.subdomains < 1 or self.max_open < 1:
            raise ValueError("subdomains and max_open must be at least 1")
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError("time_limit must be > 0 seconds")
        if self.node_limit is not None and self.node_limit < 1:
            raise ValueError("node_limit must be at least 1")

    def limit_reached(self, elapsed_s: float, nodes: int) -> bool:
        """Whether a search that ran ``elapsed_s`` seconds and bounded ``nodes`` boxes must stop."""
        return (self.time_limit is not None and elapsed_s >= self.time_limit) or (
            self.node_limit is not None and nodes >= self.node_limit)


@dataclass
class MinimizeResult:
    """The outcome: ``objective``/``x`` the best verified point (None when none was found),
    ``lower_bound`` certified (inf when proved infeasible), ``nodes`` boxes bounded."""

    problem: str
    status: str
    objective: float | None
    x: list[float] | None
    lower_bound: float
    nodes: int
    subdomains: int
    elapsed_s: float
    open_boxes: int
    local_solves: int
    local_solve_s: float
    feas_tol: float
    options: dict = field(default_factory=dict)

    @property
    def gap_abs(self) -> float | None:
        if self.objective is None or not math.isfinite(self.lower_bound):
            return None
        return max(0.0, self.objective - self.lower_bound)

    @property
    def gap_rel(self) -> float | None:
        """gap_abs / |objective| (None where that is undefined)."""
        gap = self.gap_abs
        if gap is None or (self.objective == 0 and gap > 0):
            return None
        return 0.0 if gap == 0 else gap / abs(self.objective)

    def to_json(self) -> dict:
        finite = math.isfinite(self.lower_bound)
        return {
            "problem": self.problem,
            "status": self.status,
            "objective": self.objective,
            "x": self.x,
            "lower_bound": self.lower_bound if finite else None,
            "gap_abs": self.gap_abs,
            "gap_rel": self.gap_rel,
            "nodes": self.nodes,
            "subdomains": self.subdomains,
            "elapsed_s": round(self.elapsed_s, 6),
            "open_boxes": self.open_boxes,
            "local_solves": self.local_solves,
            "local_solve_s": round(self.local_solve_s, 6),
            "feas_tol": self.feas_tol,
            **self.options,
        }


@dataclass(frozen=True)
class Progress:
    """A snapshot for progress lines: the certified bound, the incumbent, open boxes, boxes/s."""

    lower_bound: float
    objective: float | None
    open_boxes: int
    nodes: int
    elapsed_s: float


def prune_level(ub: float, options: MinimizeOptions) -> float:
    """Boxes whose bound reaches UB - max(eps_abs, eps_rel |UB|) are pruned (+inf without an
    incumbent; never -inf)."""
    if not math.isfinite(ub):
        return math.inf
    return max(ub - max(options.eps_abs, options.eps_rel * abs(ub)), -sys.float_info.max)


def result_status(unsplittable: int, found: bool, lower_bound: float) -> str:
    """The status of a search that ran to its end: ``limit`` while boxes too small to split stay
    open or the bound is -inf, ``infeasible`` when nothing was found and the bound is +inf."""
    if unsplittable:
        return "limit"
    if not found:
        return "infeasible" if lower_bound == math.inf else "limit"
    return "optimal" if lower_bound > -math.inf else "limit"


def make_result(problem: Problem, options: MinimizeOptions, incumbent: _Incumbent, local: _LocalSolver | None,
                status: str | None, unsplittable: int, lower_bound: float, nodes: int, subdomains: int,
                began: float, open_boxes: int, **details) -> MinimizeResult:
    """The result of a search (CPU or GPU) that ended with ``status`` (None: ran to its end, see
    :func:`result_status`); ``details`` (the backend and its counters) join the options."""
    found = incumbent.x is not None
    return MinimizeResult(
        problem=problem.name,
        status=status or result_status(unsplittable, found, lower_bound),
        objective=incumbent.value if found else None,
        x=incumbent.x.tolist() if found else None,
        lower_bound=float(lower_bound),
        nodes=nodes,
        subdomains=subdomains,
        elapsed_s=time.perf_counter() - began,
        open_boxes=open_boxes,
        local_solves=0 if local is None else local.count,
        local_solve_s=0.0 if local is None else local.seconds,
        feas_tol=options.feas_tol,
        options={"bound": options.bound, "eps_abs": options.eps_abs, "eps_rel": options.eps_rel,
                 "contract": options.contract, **details},
    )


def subdomains_per_dim(budget: int, d: int) -> int:
    """The largest N with N^d <= budget (at least 1)."""
    n = max(1, int(round(budget ** (1.0 / d))))
    while n > 1 and n**d > budget:
        n -= 1
    while (n + 1) ** d <= budget:
        n += 1
    return n


class _Incumbent:
    """The best verified point so far."""

    def __init__(self, problem: Problem, feas_tol: float):
        self.problem, self.feas_tol = problem, feas_tol
        self.value = math.inf
        self.x: np.ndarray | None = None

    def offer(self, x: np.ndarray) -> bool:
        """Take ``x`` when it verifies and improves the upper bound."""
        x = np.clip(np.asarray(x, dtype=np.float64), self.problem.lower, self.problem.upper)
        if not np.all(np.isfinite(x)):
            return False
        value = evaluate_point(self.problem.tape, x)
        if not is_feasible(value, self.feas_tol) or not value.f_hi < self.value:
            return False
        self.value, self.x = float(value.f_hi), x.copy()
        return True

    def offer_many(self, points: np.ndarray) -> None:
        """Offer each of the points (k x d) in turn, as :meth:`offer` would, in one evaluation: the
        first of the feasible ones with the least value, if it improves the upper bound."""
        points = np.asarray(points, dtype=np.float64)
        points = np.clip(points[np.all(np.isfinite(points), axis=1)], self.problem.lower, self.problem.upper)
        if not len(points):
            return
        values = feasible_values(self.problem.tape, points, self.feas_tol)
        if np.all(np.isnan(values)):
            return
        best = int(np.nanargmin(values))
        if values[best] < self.value:
            self.value, self.x = float(values[best]), points[best].copy()


class _NonFiniteJacobian(Exception):
    """The analytic Jacobian is not finite where SLSQP asked for it (a kink of sqrt or log at 0,
    a point where a function is undefined)."""


class _LocalSolver:
    """SLSQP from a start point within the domain; every result is offered to the incumbent, then
    pulled inside the inequalities (by SLSQP, then by Newton steps) until one verifies.

    Derivatives are analytic (:func:`.floateval.float_gradients`): one forward pass per
    distinct point gives the objective, the constraints and all their gradients, cached for the
    calls SLSQP makes at that point.  A solve that asks for a gradient that is not finite is
    redone from its start with scipy's finite differences (``fallbacks`` counts them)."""

    def __init__(self, problem: Problem, incumbent: _Incumbent):
        from .floateval import evaluate_float, float_gradients

        self.problem, self.incumbent, self.evaluate = problem, incumbent, evaluate_float
        self.gradients = float_gradients(problem.tape)
        self.count = 0
        self.fallbacks = 0
        self.seconds = 0.0
        self.bounds = list(zip(problem.lower.tolist(), problem.upper.tolist()))
        n_ineq = problem.tape.n_ineq
        self._ineq, self._eq = slice(1, 1 + n_ineq), slice(1 + n_ineq, None)
        self._key: bytes | None = None  # the last point evaluated, its outputs and their Jacobian
        self._values = self._jacobian = None

    def _at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The outputs (f, g..., h...) at ``x`` and their Jacobian, evaluated once per point."""
        key = np.asarray(x, dtype=np.float64).tobytes()
        if key != self._key:
            self._values, self._jacobian = self.gradients(x)
            self._key = key
        return self._values, self._jacobian

    def _rows(self, x: np.ndarray, rows) -> np.ndarray:
        """Rows of the Jacobian at ``x``; raises _NonFiniteJacobian unless they are all finite."""
        jacobian = self._at(x)[1][rows]
        if not np.all(np.isfinite(jacobian)):
            raise _NonFiniteJacobian
        return jacobian

    def _solve(self, start: np.ndarray, margin: float) -> np.ndarray | None:
        try:
            return self._slsqp(start, margin, analytic=True)
        except _NonFiniteJacobian:
            self.fallbacks += 1
            return self._slsqp(start, margin, analytic=False)

    def _slsqp(self, start: np.ndarray, margin: float, analytic: bool) -> np.ndarray | None:
        from scipy.optimize import minimize

        tape = self.problem.tape
        ineq, eq = self._ineq, self._eq
        constraints = []
        if analytic:
            if tape.n_ineq:
                constraints.append({"type": "ineq", "fun": lambda x: -self._at(x)[0][ineq] - margin,
                                    "jac": lambda x: -self._rows(x, ineq)})
            if tape.n_eq:
                constraints.append({"type": "eq", "fun": lambda x: self._at(x)[0][eq].copy(),
                                    "jac": lambda x: self._rows(x, eq).copy()})
            objective, gradient = (lambda x: float(self._at(x)[0][0])), (lambda x: self._rows(x, 0).copy())
        else:
            if tape.n_ineq:
                constraints.append({"type": "ineq", "fun": lambda x: -self.evaluate(tape, x)[1] - margin})
            if tape.n_eq:
                constraints.append({"type": "eq", "fun": lambda x: self.evaluate(tape, x)[2]})
            objective, gradient = (lambda x: self.evaluate(tape, x)[0]), None
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                found = minimize(objective, start, method="SLSQP", jac=gradient, bounds=self.bounds,
                                 constraints=constraints, options={"maxiter": 200, "ftol": 1e-12})
            except (ValueError, ArithmeticError):  # a start where the functions are undefined
                return None
        return found.x if np.all(np.isfinite(found.x)) else None

    def _restored(self, x: np.ndarray, margin: float) -> np.ndarray | None:
        """``x`` moved by least-norm Newton steps that set its inequalities above ``-2 margin`` to
        ``-2 margin`` (twice, so that rounding cannot leave them short) and its equalities to 0,
        within the domain, until every inequality is at most ``-margin`` in floating point; None
        where that fails.  SLSQP's line search can stop short of such a pull at a vertex of the
        feasible set (g06: "positive directional derivative"), leaving a point just outside."""
        ineq, eq = self._ineq, self._eq
        for _ in range(RESTORE_STEPS):
            values, jacobian = self._at(x)
            if np.all(values[ineq] <= -margin):
                return x
            near = values[ineq] > -2 * margin  # all set to -2 margin: a step must not push one out
            rows = np.vstack([jacobian[ineq][near], jacobian[eq]])
            residual = np.concatenate([values[ineq][near] + 2 * margin, values[eq]])
            if not (np.all(np.isfinite(rows)) and np.all(np.isfinite(residual))):
                return None
            step = np.linalg.lstsq(rows, -residual, rcond=None)[0]
            x = np.clip(x + step, self.problem.lower, self.problem.upper)
        return x if np.all(self._at(x)[0][ineq] <= -margin) else None

    def run(self, start: np.ndarray) -> np.ndarray | None:
        """A local solve from ``start``, pulled inside the inequalities until its point verifies;
        the local optimum found (before any pull) when it improved the incumbent, else None."""
        began = time.perf_counter()
        self.count += 1
        point = np.asarray(start, dtype=np.float64)
        optimum = None
        try:
            for margin in INWARD_MARGINS if self.problem.tape.n_ineq else INWARD_MARGINS[:1]:
                found = self._solve(point, margin)
                if found is None:
                    return None
                optimum = found if optimum is None else optimum
                if self.incumbent.offer(found):
                    return optimum
                restored = self._restored(found, margin) if margin > 0 else None
                if restored is not None and self.incumbent.offer(restored):
                    return optimum
                point = found
            return None
        finally:
            self.seconds += time.perf_counter() - began


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
    return outcome["seconds"], outcome["compiled"]


def code_cached(options: MinimizeOptions) -> bool:
    """Whether numba's on-disk cache holds the CPU code ``minimize`` runs with ``options`` (False:
    this is the machine's first run, or its first since an upgrade)."""
    from . import bounds, contract, floateval

    code = [bounds._bound_work_items_parallel if options.parallel else bounds._bound_work_items,
            bounds._point_outputs]  # fmt: skip
    if options.contract:
        code.append(contract._contract_boxes)
    if options.local_solves:
        code.append(floateval._outputs_and_jacobian)
    return in_cache(*code)


def compile_bounds() -> None:
    """A job of ``core.compiling.start_apart``: compile the subdomain bounds' body into numba's
    cache, on a tape of one variable (every problem's tape has the same numba types)."""
    from .tape import Op, TapeBuilder

    builder = TapeBuilder(1)
    x = builder.var(0)
    tape = builder.build(builder.binary(Op.MUL, x, x))
    bound_boxes(tape, np.zeros((1, 1)), np.ones((1, 1)), 1, int(Mode.BOTH), MinimizeOptions().feas_tol, False)


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


def minimize(problem: Problem, options: MinimizeOptions | None = None, *,
             progress: Callable[[Progress], None] | None = None, progress_seconds: float = 0.5,
             should_stop: Callable[[], bool] | None = None) -> MinimizeResult:  # fmt: skip
    """Minimize ``problem`` by spatial B&B on the CPU: an :class:`.explorer.Exploration` of the
    whole domain run to its end or to a limit; see the module docstring."""
    from .explorer import Exploration  # it builds on this module

    options = options or MinimizeOptions()
    began = time.perf_counter()
    exploration = Exploration(problem, options)
    return run_to_end(exploration, began, should_stop, progress, progress_seconds, lambda: {"backend": "cpu"})


def run_to_end(exploration, began: float, should_stop: Callable[[], bool] | None,
               progress: Callable[[Progress], None] | None, progress_seconds: float,
               details: Callable[[], dict]) -> MinimizeResult:  # fmt: skip
    """Run an exploration of the whole domain (CPU or GPU), made at ``began``, to its end or to its
    options' limits (counted from ``began``), as ``minimize``'s result (``details()``: the backend's,
    read after the run)."""
    problem, options = exploration.problem, exploration.options
    time_limit = None if options.time_limit is None else options.time_limit - (time.perf_counter() - began)
    node_limit = None if options.node_limit is None else options.node_limit - exploration.nodes
    report = exploration.run(should_stop, time_limit, node_limit, progress=progress, progress_seconds=progress_seconds)
    return make_result(problem, options, exploration.incumbent, exploration.local, None if report.done else "limit",
                       report.unsplittable, report.lower_bound, report.total_nodes,
                       exploration.n_per_dim**problem.dimension, began, report.open_boxes + report.unsplittable,
                       **details())
