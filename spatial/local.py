"""Local solves of the spatial B&B: SLSQP from a point within the domain, with analytic
gradients, each result offered to the incumbent and pulled inside the inequalities until one verifies."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable

import numpy as np

from .contract import _needed_slots
from .defaults import EPS_ABS, EPS_REL
from .lagrangian import ACTIVE, multipliers
from .network import NetworkObjective
from .opcodes import _ABS
from .options import _Incumbent
from .problem import Problem

INWARD_MARGINS = (0.0, 1e-10, 1e-8, 1e-6)  # how far a local optimum is pulled inside its inequalities
RESTORE_STEPS = 3  # Newton steps onto the margin, where SLSQP's own pull leaves a point that does not verify
SLSQP_OPTIONS = {"maxiter": 200, "ftol": 1e-12}
# an unconstrained network objective's solves stop after this many iterations: on a ReLU network's
# kinks SLSQP's line searches stall (branin-2-64-64-1-relu: 1,387 evaluations in its 4 solves, 626 with
# this cap). Over the 27 network problems of benchmarks/spatial_splits.py's set that are proved, one
# thread: 5,581 evaluations against 3,739, the same boxes in every run (network_local_solves.py)
NETWORK_SLSQP_ITERATIONS = 30
STALLED_ITERATIONS = 3  # a solve with equalities ends once its iterates are feasible and f stood still this often
TAIL_SHARE = 0.01  # ... or once they are feasible to this share of feas_tol and f's tail is below this share of the gap
KINK_STEPS = 8  # Newton steps onto the kinks of the objective's abs terms (:meth:`_LocalSolver.polished`)
# how far into feas_tol a new incumbent is moved along its equalities, the larger share first
# (:meth:`_LocalSolver._into_tolerance`)
TOLERANCE_SHARES = (0.99, 0.9, 0.5)
SLACK_SHARE = 0.25  # ... where the Lagrangian's slack is at least this share of the gap tolerance


class _Stalled(Exception):
    """Raised by :class:`_Stall` to end a solve; ``x`` is its last iterate."""

    def __init__(self, x: np.ndarray):
        super().__init__()
        self.x = x


class _Stall:
    """SLSQP's callback that ends a solve whose iterates have stalled: feasible within ``ftol`` and
    f unchanged to ``ftol`` relative, for ``STALLED_ITERATIONS`` iterations in a row; or feasible
    within ``tail_h`` with f's changes shrinking so that their geometric tail, ``d r / (1 - r)`` for
    the last change d and ratio r of the last two, is at most ``tail_f(f)``. On a curved equality
    SLSQP's iterates close in on the manifold only linearly (g11: the violation shrinks by about
    0.73 an iteration), and its own test did not end g11's first solve before ``maxiter`` (200
    iterations; 91 with the first test, 59 with both). Used only where there are equalities: the
    callback costs 5-15 % of a solve elsewhere. It takes the iterate alone and raises its own
    exception, which scipy lets through (its SLSQP before 1.16 neither passed
    ``intermediate_result`` nor stopped on StopIteration)."""

    def __init__(self, outputs, ineq: slice, eq: slice, margin: float, tail_f, tail_h: float):
        self.outputs, self.ineq, self.eq, self.margin = outputs, ineq, eq, margin
        self.tail_f, self.tail_h = tail_f, tail_h
        self.last = self.change = np.nan
        self.still = 0

    def __call__(self, x: np.ndarray) -> None:
        values = self.outputs(x)
        f = float(values[0])
        ftol = SLSQP_OPTIONS["ftol"]
        violation = max(
            float(np.max(values[self.ineq] + self.margin, initial=0.0)),
            float(np.max(np.abs(values[self.eq]), initial=0.0)),
        )
        change = abs(f - self.last)
        ratio = change / self.change  # NaN until two changes are known
        still = change <= ftol * max(1.0, abs(f)) and violation <= ftol
        self.still, self.last, self.change = (self.still + 1 if still else 0), f, change
        tail = ratio < 1.0 and violation <= self.tail_h and change * ratio / (1.0 - ratio) <= self.tail_f(f)
        if self.still >= STALLED_ITERATIONS or tail:
            raise _Stalled(np.array(x, dtype=np.float64))


class _NonFiniteJacobian(Exception):
    """The analytic Jacobian is not finite where SLSQP asked for it (a kink of sqrt or log at 0,
    a point where a function is undefined)."""


def network_gradients(
    problem: Problem, objective: NetworkObjective | None
) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
    """For a problem with an unconstrained network objective ``objective``
    (:meth:`.network.NetworkObjective.of_unconstrained`; None: it has none), the function giving f
    and its Jacobian at a point from the layers, compiled (:func:`.network_point.point_gradients`):
    one point on one core, 4.0-7.2 us from 196 to 13,140 slots, where the tape's forward mode took
    4-108 us. None for any other problem, whose tape gives them."""
    if objective is None:
        return None
    from .network_point import point_gradients

    return point_gradients(objective, problem.dimension)


class _LocalSolver:
    """SLSQP from a start point within the domain; every result is offered to the incumbent, then
    pulled inside the inequalities (by SLSQP, then by Newton steps) until one verifies.

    Derivatives are analytic (:func:`.floateval.float_gradients`, or for an unconstrained network
    objective its layers, compiled: :func:`network_gradients`): one forward pass per distinct
    point gives the objective, the constraints and all their gradients, cached for the calls
    SLSQP makes at that point.  A solve that asks for a gradient that is not finite is
    redone from its start with scipy's finite differences (``fallbacks`` counts them).  A solve
    with equalities need not be more precise than a small share of the search's gap tolerance,
    ``max(eps_abs, eps_rel |f|)``, and of ``incumbent.feas_tol`` (:class:`_Stall`)."""

    def __init__(self, problem: Problem, incumbent: _Incumbent, eps_abs: float = EPS_ABS, eps_rel: float = EPS_REL):
        from .floateval import evaluate_float, float_gradients

        self.problem, self.incumbent, self.evaluate = problem, incumbent, evaluate_float
        self.eps_abs, self.eps_rel = eps_abs, eps_rel
        network = NetworkObjective.of_unconstrained(problem)  # read once: its document is parsed
        self.gradients = network_gradients(problem, network) or float_gradients(problem.tape)
        # SLSQP's options, capped for a network objective (NETWORK_SLSQP_ITERATIONS)
        self.options = SLSQP_OPTIONS if network is None else {**SLSQP_OPTIONS, "maxiter": NETWORK_SLSQP_ITERATIONS}
        kinks = _objective_kinks(problem.tape)
        self.kink_arguments = float_gradients(problem.tape, kinks) if len(kinks) else None
        self.count = 0
        self.evaluations = 0  # points at which f, the constraints and their Jacobian were evaluated (:meth:`_at`)
        self.fallbacks = 0
        self.seconds = 0.0
        self.bounds = list(zip(problem.lower.tolist(), problem.upper.tolist()))
        n_ineq = problem.tape.n_ineq
        self._ineq, self._eq = slice(1, 1 + n_ineq), slice(1 + n_ineq, None)
        self._key: bytes | None = None  # the last point evaluated, its outputs and their Jacobian
        self._values = self._jacobian = None
        self.found: np.ndarray | None = None  # the last solve's local optimum (before any pull), None if none
        self.best_found = math.inf  # f at the best local optimum that gave the incumbent, itself or pulled

    def _at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The outputs (f, g..., h...) at ``x`` and their Jacobian, evaluated once per point."""
        key = np.asarray(x, dtype=np.float64).tobytes()
        if key != self._key:
            self._values, self._jacobian = self.gradients(x)
            self._key = key
            self.evaluations += 1
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
                constraints.append(
                    {
                        "type": "ineq",
                        "fun": lambda x: -self._at(x)[0][ineq] - margin,
                        "jac": lambda x: -self._rows(x, ineq),
                    }
                )
            if tape.n_eq:
                constraints.append(
                    {
                        "type": "eq",
                        "fun": lambda x: self._at(x)[0][eq].copy(),
                        "jac": lambda x: self._rows(x, eq).copy(),
                    }
                )
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
                found = minimize(
                    objective,
                    start,
                    method="SLSQP",
                    jac=gradient,
                    bounds=self.bounds,
                    constraints=constraints,
                    options=self.options,
                    callback=self._stall(margin) if tape.n_eq else None,
                )
            except (ValueError, ArithmeticError):  # a start where the functions are undefined
                return None
            except _Stalled as stalled:
                x = stalled.x
            else:
                x = found.x
        return x if np.all(np.isfinite(x)) else None

    def _stall(self, margin: float) -> _Stall:
        def tail_f(f: float) -> float:
            return TAIL_SHARE * max(self.eps_abs, self.eps_rel * abs(f))

        return _Stall(
            lambda x: self._at(x)[0], self._ineq, self._eq, margin, tail_f, TAIL_SHARE * self.incumbent.feas_tol
        )

    def _restored(self, x: np.ndarray, margin: float) -> np.ndarray | None:
        """``x`` moved by least-norm Newton steps that set its inequalities above ``-2 margin`` to
        ``-2 margin`` (twice, so that rounding cannot leave them short) and its equalities to 0,
        within the domain, until every inequality is at most ``-margin`` in floating point; None
        where that fails.  SLSQP's line search can stop short of such a pull at a vertex of the
        feasible set (g06: "positive directional derivative"), leaving a point just outside."""
        ineq = self._ineq
        for _ in range(RESTORE_STEPS):
            values = self._at(x)[0]
            if np.all(values[ineq] <= -margin):
                return x
            near = values[ineq] > -2 * margin  # all set to -2 margin: a step must not push one out
            x = self._newton_step(x, near, -2 * margin, 0.0)
            if x is None:
                return None
        return x if np.all(self._at(x)[0][ineq] <= -margin) else None

    def _newton_step(self, x: np.ndarray, held, ineq_target, eq_target) -> np.ndarray | None:
        """``x`` moved by one least-norm Newton step, within the domain, toward the inequalities
        ``held`` (a mask) at ``ineq_target`` and the equalities at ``eq_target``; None where the
        values or the Jacobian rows are not finite."""
        values, jacobian = self._at(x)
        ineq, eq = self._ineq, self._eq
        rows = np.vstack([jacobian[ineq][held], jacobian[eq]])
        residual = np.concatenate([values[ineq][held] - ineq_target, values[eq] - eq_target])
        if not (np.all(np.isfinite(rows)) and np.all(np.isfinite(residual))):
            return None
        with np.errstate(all="ignore"):
            step = np.linalg.lstsq(rows, -residual, rcond=None)[0]
        return np.clip(x + step, self.problem.lower, self.problem.upper)

    def run(self, start: np.ndarray) -> np.ndarray | None:
        """A local solve from ``start``, pulled inside the inequalities until its point verifies;
        the local optimum found (before any pull) when it improved the incumbent, else None
        (:attr:`found` holds it either way).  The pulls go from cheap to dear: Newton steps from the
        local optimum onto each margin first, then SLSQP again with each margin; none where the local
        optimum is no better than the incumbent.  A new incumbent of a problem with equalities is then
        moved into their tolerance (:meth:`_into_tolerance`)."""
        began = time.perf_counter()
        self.count += 1
        try:
            optimum = self._run(start)
            if optimum is not None and self.problem.tape.n_eq:
                self._into_tolerance(self.incumbent.x)
            return optimum
        finally:
            self.seconds += time.perf_counter() - began

    def _into_tolerance(self, x: np.ndarray) -> None:
        """Offer ``x`` (the incumbent) moved by least-norm Newton steps that set each equality h_j to
        ``sign(lam_j) share feas_tol`` (lam: the multipliers at ``x``), holding the inequalities
        active there: to first order f falls by ``sum |lam_j| share feas_tol``, which is what the
        Lagrangian bound's slack allows the feasible points (``lagrangian``). Without it the search
        must close that slack with its boxes: on HS039 (f = -x1, a degenerate optimum) the
        incumbent stayed 1e-6 above the least feasible value, and the boxes had to enclose L to
        3e-9 to prune against it."""
        weights = multipliers(self.problem.tape, x)
        if weights is None:
            return
        values = self._at(x)[0]
        slack = float(np.abs(weights[1]).sum()) * self.incumbent.feas_tol
        if not slack >= SLACK_SHARE * max(self.eps_abs, self.eps_rel * abs(float(values[0]))):
            return  # the search's gap tolerance covers it
        active = values[self._ineq] >= -ACTIVE
        held = values[self._ineq][active]
        for share in TOLERANCE_SHARES:
            target = np.sign(weights[1]) * share * self.incumbent.feas_tol
            point = x
            for _ in range(RESTORE_STEPS):
                point = self._newton_step(point, active, held, target)
                if point is None:
                    return
            if self.incumbent.offer(point):
                return

    def _run(self, start: np.ndarray) -> np.ndarray | None:
        """:meth:`run`'s solve and pulls."""
        optimum = self._solve(np.asarray(start, dtype=np.float64), 0.0)
        if optimum is None:
            self.found = None
            return None
        optimum = self.found = self.polished(optimum)
        if self._improves(optimum, optimum):
            return optimum
        if not self.problem.tape.n_ineq or self._no_better(optimum):
            return None
        margins = INWARD_MARGINS[1:]
        if any(self._improves(self._restored(optimum, margin), optimum) for margin in margins):
            return optimum
        point = optimum
        for margin in margins:
            found = self._solve(point, margin)
            if found is None:
                return None
            if self._improves(found, optimum) or self._improves(self._restored(found, margin), optimum):
                return optimum
            point = found
        return None

    def polished(self, x: np.ndarray) -> np.ndarray:
        """``x`` moved by least-norm Newton steps that set the arguments of the objective's abs terms
        to 0 together, where that lowers f in floating point; else ``x``. SLSQP stalls near such a
        kink, where the gradient jumps or is infinite (Bukin N.6, 100 sqrt|x2 - 0.01 x1^2| + 0.01
        |x1 + 10|: 8 solves of up to 200 iterations each left the search 1,179 boxes to find a point
        below 1e-6); there the kinks' system is square, and Newton reaches its root, (-10, 1), in a
        few steps."""
        if self.kink_arguments is None:
            return x
        point = x
        with np.errstate(all="ignore"):
            for _ in range(KINK_STEPS):
                values, jacobian = self.kink_arguments(point)
                if not (np.all(np.isfinite(values)) and np.all(np.isfinite(jacobian))) or not np.any(values):
                    break
                step = np.linalg.lstsq(jacobian, -values, rcond=None)[0]
                moved = np.clip(point + step, self.problem.lower, self.problem.upper)
                if np.array_equal(moved, point):
                    break
                point = moved
        f_before, f_after = float(self._at(x)[0][0]), float(self._at(point)[0][0])
        return point if f_after < f_before else x

    def _no_better(self, x: np.ndarray) -> bool:
        """Whether f at the local optimum ``x`` is no better, to SLSQP's own tolerance, than the
        incumbent's value or the local optimum it was pulled from: a pull inside the inequalities
        only raises f, so it could not beat the incumbent (hs071, st_e01 and g06 find their first
        optimum again from later starts, and each was pulled 3 more times)."""
        best = min(self.incumbent.value, self.best_found)
        return float(self._at(x)[0][0]) >= best - SLSQP_OPTIONS["ftol"] * max(1.0, abs(best))

    def _improves(self, point: np.ndarray | None, optimum: np.ndarray) -> bool:
        """Offer ``point`` (``optimum`` itself or pulled from it; None: no point); when it becomes
        the incumbent, ``optimum``'s f is the best local optimum's."""
        if point is None or not self.incumbent.offer(point):
            return False
        self.best_found = float(self._at(optimum)[0][0])
        return True


def _objective_kinks(tape) -> np.ndarray:
    """The slots whose absolute value the objective takes (its abs terms' arguments), once each."""
    needed = _needed_slots(tape.op, tape.arg0, tape.arg1, tape.outputs[:1])
    return np.unique(tape.arg0[needed & (tape.op == _ABS)]).astype(np.int32)
