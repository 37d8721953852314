"""Float64 evaluation and its forward-mode Jacobian (``evaluate_float_gradients``), and the local
solver that uses it: exact derivatives on simple cases, the conventions at kinks and domain edges,
agreement with central differences on random expressions and on every problem file, and B&B
results unchanged against finite-difference local solves."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from spatial_helpers import random_expression

from pbbflow.spatial import Model, atan2, cos, exp, log, maximum, minimum, relu, sigmoid, sin, sqrt, tan, tanh
from pbbflow.spatial import abs as abs_
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.floateval import evaluate_float, evaluate_float_gradients, float_gradients
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.local import TAIL_SHARE, _LocalSolver
from pbbflow.spatial.options import MinimizeOptions, _Incumbent
from pbbflow.spatial.tape import Op, TapeBuilder

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "spatial"
PROBLEM_FILES = sorted(DATA.glob("[BC]*.json"))
needs_data = pytest.mark.skipif(not PROBLEM_FILES, reason="../shared/data/spatial not present")
BUILTINS = ["peaks", "peaks-ann", "peaks-ann-error-min", "peaks-ann-error-max"]


def _tape(build, d: int = 2, lower=-2.0, upper=2.0):
    """The tape of a one-objective model: build(x) gives its expression over d variables."""
    m = Model("t")
    x = [m.variable(lower, upper) for _ in range(d)]
    m.minimize(build(*x))
    return m.problem().tape


def _gradient(build, point, d: int = 2) -> np.ndarray:
    return evaluate_float_gradients(_tape(build, d), np.asarray(point, dtype=np.float64))[1][0]


def _outputs(tape, x) -> np.ndarray:
    f, g, h = evaluate_float(tape, x)
    return np.concatenate([[f], g, h])


@np.errstate(all="ignore")
def _central(tape, x: np.ndarray, step: float) -> np.ndarray:
    """Central differences of every output (rows) in every variable (columns)."""
    columns = []
    for i in range(len(x)):
        h = step * max(1.0, abs(x[i]))
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        columns.append((_outputs(tape, up) - _outputs(tape, down)) / (up[i] - down[i]))
    return np.array(columns).T


def _check_against_differences(tape, x: np.ndarray, rtol: float = 1e-5) -> bool:
    """Whether x was checked: the values equal evaluate_float's bit for bit, and where central
    differences are stable (two steps agree, so x is not near a kink, a pole or a domain edge)
    the Jacobian matches them.  False when they are not stable there."""
    values, jacobian = evaluate_float_gradients(tape, x)
    np.testing.assert_array_equal(values, _outputs(tape, x))
    assert jacobian.shape == (len(values), len(x))
    coarse, fine = _central(tape, x, 1e-5), _central(tape, x, 1e-6)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(coarse)) and np.all(np.isfinite(fine))):
        return False
    # relative to the derivative, or to what the differences' rounding leaves of a small one
    scale = np.maximum(np.abs(fine), 1e-4 * np.maximum(1.0, np.abs(values))[:, None])
    if np.any(np.abs(coarse - fine) > 1e-6 * scale):
        return False
    assert np.all(np.abs(jacobian - fine) <= rtol * scale), (x, jacobian, fine)
    return True


# ---------------------------------------------------------------- exact derivatives and conventions


def test_exact_derivatives_of_simple_expressions():
    x, y = 0.7, -1.3
    assert _gradient(lambda a, b: a * b, [x, y]).tolist() == [y, x]
    assert _gradient(lambda a, b: a - b, [x, y]).tolist() == [1.0, -1.0]
    assert _gradient(lambda a, b: -a + b, [x, y]).tolist() == [-1.0, 1.0]
    assert _gradient(lambda a, b: a / b, [x, y]).tolist() == pytest.approx([1 / y, -x / y**2], rel=1e-15)
    assert _gradient(lambda a, b: a**3 * b**-2, [x, y]).tolist() == pytest.approx(
        [3 * x**2 * y**-2, -2 * x**3 * y**-3], rel=1e-15
    )
    assert _gradient(lambda a, b: a**0 + b, [x, y]).tolist() == [0.0, 1.0]
    for function, derivative in [
        (sin, math.cos),
        (cos, lambda t: -math.sin(t)),
        (exp, math.exp),
        (tanh, lambda t: 1 - math.tanh(t) ** 2),
        (tan, lambda t: 1 + math.tan(t) ** 2),
        (sigmoid, lambda t: math.exp(-t) / (1 + math.exp(-t)) ** 2),
    ]:
        assert _gradient(lambda a, b: function(a), [x, y])[0] == pytest.approx(derivative(x), rel=1e-14)
    assert _gradient(lambda a, b: sqrt(a) + log(a), [x, y])[0] == pytest.approx(0.5 / math.sqrt(x) + 1 / x, rel=1e-15)
    r2 = x * x + y * y
    assert _gradient(lambda a, b: atan2(a, b), [x, y]).tolist() == pytest.approx([y / r2, -x / r2], rel=1e-14)
    assert _gradient(lambda a, b: abs_(a) + abs_(b), [x, y]).tolist() == [1.0, -1.0]
    assert _gradient(lambda a, b: relu(a) + relu(b), [x, y]).tolist() == [1.0, 0.0]
    assert _gradient(lambda a, b: minimum(a, b), [x, y]).tolist() == [0.0, 1.0]
    assert _gradient(lambda a, b: maximum(a, b), [x, y]).tolist() == [1.0, 0.0]
    assert _gradient(lambda a, b: sin(a * b) * exp(b), [x, y]).tolist() == pytest.approx(
        [y * math.cos(x * y) * math.exp(y), (x * math.cos(x * y) + math.sin(x * y)) * math.exp(y)], rel=1e-14
    )


def test_kinks_take_one_side_and_domain_edges_give_inf_or_nan():
    assert _gradient(lambda a, b: abs_(a), [0.0, 1.0]).tolist() == [1.0, 0.0]
    assert _gradient(lambda a, b: abs_(a), [-0.0, 1.0]).tolist() == [1.0, 0.0]
    assert _gradient(lambda a, b: relu(a), [0.0, 1.0]).tolist() == [0.0, 0.0]
    assert _gradient(lambda a, b: minimum(a, b), [1.0, 1.0]).tolist() == [1.0, 0.0]  # a tie: the first
    assert _gradient(lambda a, b: maximum(a, b), [1.0, 1.0]).tolist() == [1.0, 0.0]
    assert _gradient(lambda a, b: sqrt(a), [0.0, 1.0]).tolist() == [math.inf, 0.0]
    assert _gradient(lambda a, b: sqrt(a), [-0.0, 1.0]).tolist() == [math.inf, 0.0]
    assert _gradient(lambda a, b: log(a), [0.0, 1.0]).tolist() == [math.inf, 0.0]
    assert _gradient(lambda a, b: a**-1, [0.0, 1.0])[0] == -math.inf
    gradient = _gradient(lambda a, b: sqrt(a) + b, [-1.0, 1.0])  # the value is nan: so is its derivative
    assert math.isnan(gradient[0]) and math.isnan(gradient[1])
    assert all(math.isnan(v) for v in _gradient(lambda a, b: atan2(a, b), [0.0, 0.0]))


def test_slots_that_do_not_depend_on_a_variable_keep_a_zero_derivative():
    builder = TapeBuilder(2)
    zero = builder.const(0.0)
    x, y = builder.var(0), builder.var(1)
    total = builder.binary(Op.ADD, builder.unary(Op.SQRT, zero), x)  # sqrt(0) has derivative inf, but in nothing
    total = builder.binary(Op.ADD, total, builder.binary(Op.MUL, builder.unary(Op.LOG, zero), y))  # -inf * y
    tape = builder.build(total, [builder.binary(Op.MUL, x, x)], [builder.unary(Op.SQRT, y)])
    values, jacobian = evaluate_float_gradients(tape, np.array([3.0, 0.5]))
    assert values.tolist() == [-math.inf, 9.0, math.sqrt(0.5)]
    assert jacobian[0].tolist() == [1.0, -math.inf] and jacobian[1].tolist() == [6.0, 0.0]
    assert jacobian[2].tolist() == [0.0, pytest.approx(0.5 / math.sqrt(0.5), rel=1e-15)]
    assert evaluate_float_gradients(tape, np.array([3.0, 0.0]))[1][2].tolist() == [0.0, math.inf]


def test_saturating_functions_keep_their_small_derivatives():
    for t in (-30.0, -12.0, 12.0, 30.0):
        assert _gradient(lambda a, b: tanh(a), [t, 0.0])[0] == pytest.approx(1 / math.cosh(t) ** 2, rel=1e-13)
        assert _gradient(lambda a, b: sigmoid(a), [t, 0.0])[0] == pytest.approx(
            math.exp(-abs(t)) / (1 + math.exp(-abs(t))) ** 2, rel=1e-13
        )


def test_a_zero_partial_derivative_drops_an_operand_s_inf_or_nan():
    assert _gradient(lambda a, b: sqrt(a) ** 0 + b, [-1.0, 1.0]).tolist() == [0.0, 1.0]  # 1 even at nan
    assert _gradient(lambda a, b: minimum(sqrt(a), b), [0.0, -1.0]).tolist() == [0.0, 1.0]
    assert _gradient(lambda a, b: maximum(sqrt(a), b), [0.0, -1.0]).tolist() == [math.inf, 0.0]
    assert _gradient(lambda a, b: relu(-sqrt(a)) + b, [0.0, 1.0]).tolist() == [0.0, 1.0]


def test_the_point_must_match_the_tape():
    tape = _tape(lambda a, b: a * b)
    with pytest.raises(ValueError):
        evaluate_float_gradients(tape, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        float_gradients(tape)([1.0])


# ---------------------------------------------------------------- central differences


def test_random_expressions_match_central_differences():
    rng = np.random.default_rng(15)
    checked = 0
    for _ in range(200):
        n_vars = int(rng.integers(1, 4))
        builder, slot = random_expression(rng, n_vars, int(rng.integers(3, 14)))
        tape = builder.build(slot)
        for x in rng.uniform(-3, 3, (5, n_vars)):
            checked += _check_against_differences(tape, x)
    assert checked >= 800  # of 1,000 points: the rest sit where differences are unstable or values undefined


@needs_data
@pytest.mark.parametrize("spec", [*PROBLEM_FILES, *BUILTINS], ids=lambda p: getattr(p, "stem", p))
def test_problem_jacobians_match_central_differences(spec):
    problem = load_problem(str(spec))
    rng = np.random.default_rng(3)
    points = [*rng.uniform(problem.lower, problem.upper, (20, problem.dimension))]
    if problem.x_optimum is not None:
        points.append(np.asarray(problem.x_optimum, dtype=np.float64))
    checked = sum(_check_against_differences(problem.tape, x) for x in points)
    assert checked >= 0.9 * len(points)


# ---------------------------------------------------------------- the local solver


def _constrained():
    """min (x - 2)^2 + (y - 1)^2 with x^2 - y <= 0 and x + y = 2: (1, 1), value 1."""
    m = Model("constrained")
    x, y = m.variable(-3, 3), m.variable(-3, 3)
    m.minimize((x - 2) ** 2 + (y - 1) ** 2)
    m.subject_to(x**2 - y <= 0)
    m.subject_to(x + y - 2 == 0)
    return m.problem(optimum=1.0)


def _evaluated_points(local: _LocalSolver) -> list[np.ndarray]:
    """The points ``local`` evaluates its outputs and Jacobian at from now on, in order."""
    points = []
    evaluate = local.gradients

    def recording(x):
        points.append(np.array(x, dtype=np.float64))
        return evaluate(x)

    local.gradients = recording
    return points


def test_the_local_solver_evaluates_each_point_once_with_analytic_gradients():
    problem = _constrained()
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
    points = _evaluated_points(local)
    optimum = local.run(np.array([-2.0, 2.5]))
    assert optimum is not None and np.allclose(optimum, [1.0, 1.0], atol=1e-7)
    assert local.fallbacks == 0 and local.incumbent.value == pytest.approx(1.0, abs=1e-6)
    assert points and all(not np.array_equal(a, b) for a, b in zip(points, points[1:]))


def test_a_gradient_that_is_not_finite_redoes_the_solve_with_finite_differences():
    m = Model("sqrt edge")
    x, y = m.variable(0, 4), m.variable(-1, 1)
    m.minimize(sqrt(x) + (y - 0.5) ** 2)  # the optimum sits where sqrt' is +inf
    problem = m.problem()
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
    optimum = local.run(np.array([0.0, -1.0]))
    assert local.fallbacks == 1
    assert optimum is not None and optimum[0] == pytest.approx(0.0, abs=1e-6)
    assert optimum[1] == pytest.approx(0.5, abs=1e-3)
    result = minimize(problem, MinimizeOptions(parallel=False))
    assert result.status == "optimal" and result.objective == pytest.approx(0.0, abs=1e-6)


BUKIN = Path(__file__).resolve().parents[2] / "benchmarks" / "problems" / "bukin-6.json"


def test_float_gradients_of_chosen_slots_are_those_of_the_whole_pass():
    builder, out = random_expression(np.random.default_rng(3), 3, 12)
    tape = builder.build(out)
    slots = np.array([tape.size - 1, 2, 0], dtype=np.int32)
    x = np.array([0.3, -0.7, 1.1])
    values, jacobian = float_gradients(tape, slots)(x)
    every, whole = float_gradients(tape, np.arange(tape.size, dtype=np.int32))(x)
    assert np.array_equal(values, every[slots], equal_nan=True)
    assert np.array_equal(jacobian, whole[slots], equal_nan=True)


def test_newton_onto_the_kinks_reaches_bukins_optimum_from_its_ridge_and_its_centre():
    """Issue 35: SLSQP stalls at the edge of Bukin N.6's kinks; Newton steps on both abs arguments
    together land on (-10, 1), where f is 100 sqrt(2e-17) = 4.6e-7, from a point of the ridge and from
    the domain's centre (both kinks' arguments far from 0)."""
    problem = load_problem(str(BUKIN))
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
    for start in ([-12.0, 1.44], [-10.0, 0.0]):
        point = local.polished(np.array(start))
        assert np.allclose(point, [-10.0, 1.0], rtol=0, atol=1e-12), point
        assert evaluate_float(problem.tape, point)[0] < 1e-6
    result = minimize(problem, MinimizeOptions(parallel=False))
    assert result.status == "optimal" and result.lower_bound <= 0.0 < result.objective < 1e-6
    assert result.nodes == 1 and result.extras["local_solves"] == 0  # the root's point, moved, ends it


def test_a_kink_that_raises_f_or_lies_outside_the_domain_leaves_the_point():
    m = Model("kink away from the optimum")
    x, y = m.variable(-2, 2), m.variable(0, 1)
    m.minimize(abs_(x - 1.5) + 4 * (x + 1) ** 2 + abs_(y + 3))  # y + 3 > 0 on the domain: no root there
    problem = m.problem()
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
    start = np.array([-1.0, 0.0])
    assert local.polished(start) is start
    m = Model("no kink")
    x = m.variable(-1, 1)
    m.minimize(x * x)
    problem = m.problem()
    assert _LocalSolver(problem, _Incumbent(problem, 1e-6)).kink_arguments is None


@needs_data
@pytest.mark.parametrize("name", ["C1", "C3", "C9", "C17", "B20", "peaks-ann"])
def test_bnb_results_match_finite_difference_local_solves(name, monkeypatch):
    spec = "peaks-ann" if name == "peaks-ann" else str(next(DATA.glob(f"{name}-*.json")))
    problem = load_problem(spec)
    options = MinimizeOptions(parallel=False)
    analytic = minimize(problem, options)
    monkeypatch.setattr(_LocalSolver, "_solve", lambda self, start, margin: self._slsqp(start, margin, analytic=False))
    numeric = minimize(problem, options)
    tolerance = max(options.eps_abs, options.eps_rel * abs(problem.optimum))
    assert analytic.status == numeric.status == "optimal"
    assert abs(analytic.objective - numeric.objective) <= tolerance
    assert analytic.lower_bound <= problem.optimum + 1e-12 * max(1.0, abs(problem.optimum))


def _crescent():
    """G06's two constraints (Floudas & Pardalos): the feasible set is a thin crescent, and its
    optimum a vertex where their gradients point almost opposite ways."""
    m = Model("g06")
    x, y = m.variable(13, 100), m.variable(0, 100)
    m.minimize((x - 10) ** 3 + (y - 20) ** 3)
    m.subject_to(-((x - 5) ** 2) - (y - 5) ** 2 + 100 <= 0)
    m.subject_to((x - 6) ** 2 + (y - 5) ** 2 - 82.81 <= 0)
    return m.problem(optimum=-6961.813875580138)


@pytest.mark.parametrize("outside", [[14.095, 0.84296079], [14.095000001, 0.8429608], [14.09499999, 0.8429607]])
def test_a_point_just_outside_a_vertex_is_restored_inside_both_constraints_and_verifies(outside):
    problem = _crescent()
    for margin in (1e-10, 1e-8, 1e-6):
        local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
        restored = local._restored(np.array(outside), margin)
        assert restored is not None
        assert np.all(evaluate_float(problem.tape, restored)[1] <= -margin)
        assert np.abs(restored - outside).max() < 1e-4
        assert local.incumbent.offer(restored)  # rigorously inside both constraints
        assert problem.optimum <= local.incumbent.value <= problem.optimum + 1e-2


def test_a_restoration_that_cannot_reach_the_margin_gives_nothing():
    m = Model("empty")
    x = m.variable(-1, 1)
    m.minimize(x)
    m.subject_to(x**2 + 1 <= 0)  # nowhere feasible: Newton steps on x**2 + 1 never reach it
    problem = m.problem()
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
    assert local._restored(np.array([0.5]), 1e-8) is None


def test_the_local_solver_finds_the_crescents_vertex_optimum_within_the_tolerance():
    problem = _crescent()
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
    local.run(np.array([13.75322002, 0.6474759]))
    assert problem.optimum <= local.incumbent.value <= problem.optimum + 1e-6 * abs(problem.optimum)


def _curved_equality():
    """G11 (CEC 2006): the optimum 3/4 lies on the parabola x2 = x1**2, where SLSQP's iterates close
    in on the manifold only linearly (the Maratos effect)."""
    m = Model("g11")
    x, y = m.variable(-1, 1), m.variable(-1, 1)
    m.minimize(x**2 + (y - 1) ** 2)
    m.subject_to(y - x**2 == 0)
    return m.problem(optimum=0.75)


@pytest.mark.parametrize(("eps", "most_points"), [(1e-6, 150), (1e-10, 300)])
def test_a_solve_on_a_curved_equality_stops_as_precise_as_the_gap_needs_and_verifies(eps, most_points):
    """SLSQP's own test ran to maxiter (200 iterations) here: 674 points. With the default gap
    the solve stops once f's tail is below a hundredth of it (118 points), with a tiny gap once
    its iterates stall (178)."""
    problem = _curved_equality()
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6), eps_abs=eps, eps_rel=eps)
    points = _evaluated_points(local)
    assert local.run(np.array([0.3, 0.7])) is not None
    gap = max(eps, eps * problem.optimum)
    assert problem.optimum - 1e-6 <= local.incumbent.value <= problem.optimum + 2 * TAIL_SHARE * gap
    assert len(points) < most_points


def test_a_local_optimum_no_better_than_the_incumbent_is_not_pulled_inside_again():
    problem = _crescent()
    local = _LocalSolver(problem, _Incumbent(problem, 1e-6))
    local.run(np.array([13.75322002, 0.6474759]))
    first = local.incumbent.value
    margins = []
    solve = local._solve
    local._solve = lambda start, margin: (margins.append(margin), solve(start, margin))[1]
    assert local.run(np.array([13.75322002, 0.6474759])) is None  # the same vertex, found again
    assert margins == [0.0] and local.incumbent.value == first
    assert local.found is not None and abs(local.found - local.incumbent.x).max() < 1e-4
