"""The Lagrangian bound: its tape, its multipliers, and bounds that stay valid with any weights."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from spatial_helpers import check_below_the_curve, circle_problem, two_optima_curve, two_optima_problem

from pbbflow.spatial import Model, exp, sin
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import bound_boxes, evaluate_point, is_feasible
from pbbflow.spatial.explorer import Exploration, _OpenBoxes
from pbbflow.spatial.floateval import evaluate_float
from pbbflow.spatial.lagrangian import lagrangian_bound, multipliers
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.local import _LocalSolver
from pbbflow.spatial.options import MinimizeOptions, _Incumbent


def test_the_tape_is_f_plus_the_weighted_constraints():
    problem = circle_problem()
    mu, lam = np.array([0.25]), np.array([-1.5])
    bound = lagrangian_bound(problem.tape, mu, lam, feas_tol=1e-6)
    for point in np.random.default_rng(2).uniform(-2, 2, (20, 2)):
        f, g, h = evaluate_float(problem.tape, point)
        value, g_l, h_l = evaluate_float(bound.tape, point)
        assert math.isclose(value, f + 0.25 * g[0] - 1.5 * h[0], rel_tol=1e-12, abs_tol=1e-12)
        assert np.array_equal(g, g_l) and np.array_equal(h, h_l)
    assert 1.5e-6 <= bound.slack <= 1.5e-6 * (1 + 1e-12)
    with pytest.raises(ValueError):
        lagrangian_bound(problem.tape, np.array([-0.1]), lam, 1e-6)


def test_multipliers_of_a_kkt_point():
    problem = circle_problem()
    mu, lam = multipliers(problem.tape, np.array([-1.0, -1.0]) / math.sqrt(2))
    assert mu[0] == 0.0  # the inequality is not active there
    assert abs(lam[0] - 1 / math.sqrt(2)) < 1e-6


@pytest.mark.parametrize("seed", range(4))
def test_any_weights_give_a_valid_bound(seed):
    """With random weights, L's bound minus the slack never exceeds f at a sampled feasible point."""
    rng = np.random.default_rng(seed)
    problem = circle_problem()
    bound = lagrangian_bound(problem.tape, rng.uniform(0, 3, 1), rng.uniform(-3, 3, 1), feas_tol=1e-3)
    lo = rng.uniform(-2, 0.5, (6, 2))
    hi = np.minimum(lo + rng.uniform(0.1, 1.5, (6, 2)), 2.0)
    found = bound_boxes(bound.tape, lo, hi, 4, 3, feas_tol=1e-3)
    angles = np.linspace(0, 2 * np.pi, 20001)
    radius = 1 + rng.uniform(-1e-3, 1e-3, angles.size)  # |h| <= feas_tol
    points = np.stack([radius * np.cos(angles), radius * np.sin(angles)], 1)
    for b in range(len(lo)):
        inside = np.all((points >= lo[b]) & (points <= hi[b]), axis=1) & (points[:, 0] - points[:, 1] - 1 <= 0)
        if inside.any():
            assert found.lb[b] - bound.slack <= np.min(points[inside].sum(axis=1)) + 1e-12


def test_equality_problems_are_proved_with_few_boxes():
    """Random equality-constrained problems: proved, bound at or below every feasible sampled value."""
    rng = np.random.default_rng(11)
    for trial in range(4):
        a, b = rng.uniform(-2, 2, 2)
        m = Model(f"curve {trial}")
        x, y = m.variable(-2, 2), m.variable(-2, 2)
        m.minimize(a * x + b * y + 0.3 * sin(2 * x) + 0.2 * exp(y / 2))
        m.subject_to(x**2 + 2 * y**2 - 1.5 == 0)
        problem = m.problem()
        result = minimize(problem, MinimizeOptions(time_limit=30))
        angles = np.linspace(0, 2 * np.pi, 200001)
        xs, ys = math.sqrt(1.5) * np.cos(angles), math.sqrt(0.75) * np.sin(angles)
        sampled = np.min(a * xs + b * ys + 0.3 * np.sin(2 * xs) + 0.2 * np.exp(ys / 2))
        assert result.status == "optimal" and result.nodes < 5000
        assert result.lower_bound <= sampled + 1e-9
        assert result.objective <= sampled + 1e-5


def test_weights_are_the_same_set_within_a_hundredth_of_the_largest():
    problem = circle_problem()
    base = lagrangian_bound(problem.tape, np.array([0.5]), np.array([-2.0]), 1e-6)
    assert np.array_equal(base.weights, [0.5, -2.0])
    near = lagrangian_bound(problem.tape, np.array([0.49]), np.array([-2.01]), 1e-6)
    flipped = lagrangian_bound(problem.tape, np.array([0.5]), np.array([2.0]), 1e-6)
    assert base.same_weights(near) and near.same_weights(base)
    assert not base.same_weights(flipped) and not flipped.same_weights(base)


def test_an_explorer_keeps_the_lagrangians_of_both_optima():
    """A local optimum that ties the incumbent brings its own multipliers: both optima's are kept."""
    problem = two_optima_problem()
    result = minimize(problem, MinimizeOptions(parallel=False, subdomains=8))
    assert result.status == "optimal" and result.lower_bound <= problem.optimum
    assert abs(result.objective - problem.optimum) <= 1e-6  # |h| <= feas_tol lets it dip below
    exploration = Exploration(problem, MinimizeOptions(parallel=False, subdomains=8))
    exploration.run()
    lam = [bound.weights[-1] for _, _, bound in exploration._lagrangians]
    assert len(lam) == 2 and lam[0] * lam[1] < 0 and abs(lam[0] + lam[1]) < 1e-3 * abs(lam[0])


def test_bounds_by_the_nearest_of_two_lagrangians_stay_below_the_feasible_curve():
    """An incumbent 1e-3 above the optimum (so that part of the curve lies below the prune level)
    and the Lagrangians of it and its mirror image: at every stop each point of the feasible curve
    below the level lies in an open box whose bound is at or below its value (sampled; the curve is
    exact up to rounding, far inside feas_tol)."""
    problem = two_optima_problem()
    points = two_optima_curve(200001)
    values = np.prod(points, axis=1)
    assert problem.optimum <= values.min() <= problem.optimum + 1e-9
    near = int(np.argmin(np.abs(values - (problem.optimum + 1e-3))))
    options = MinimizeOptions(parallel=False, subdomains=8, local_solves=False, first_incumbents=False)
    exploration = Exploration(problem, options)
    assert exploration.offer(points[near])
    exploration._add_multipliers_at(points[near] * [1, -1, -1], first=False)
    assert len(exploration._lagrangians) == 2
    seen = check_below_the_curve(exploration, points, values, node_limit=8)
    assert exploration.done and seen > 1000 and exploration.lower_bound <= problem.optimum


@pytest.mark.parametrize("name", ["C-g13-cec2006", "C-g05-cec2006"])
def test_the_equality_benchmarks_are_proved_within_their_node_counts(name):
    """G13 (four symmetric optima, two multiplier sets) stalled at a gap of 4e-4 with one
    Lagrangian; with each box bounded by its nearest optimum's it is proved in 8,967 boxes."""
    problem = load_problem(str(Path(__file__).resolve().parents[2] / "benchmarks" / "problems" / f"{name}.json"))
    result = minimize(problem, MinimizeOptions(parallel=False, node_limit=20000))
    assert result.status == "optimal" and result.lower_bound <= problem.optimum
    assert abs(result.objective - problem.optimum) <= 1e-6


def test_a_fixed_variable_does_not_spoil_the_choice_of_lagrangian():
    """A variable with lo = hi (the domain's width 0) is no distance between a box and a
    Lagrangian's point: the search proves the same minimum as the problem without it, and no
    0 / 0 reaches the user as a warning."""

    def problem(fixed: bool):
        m = Model("fixed" if fixed else "free")
        x = m.variable(-2, 2)
        y = m.variable(1, 1) if fixed else 1.0
        z = m.variable(-2, 2)
        m.minimize(x * x * x + z * z - x * z)
        m.subject_to(x * x + z * z + y == 2)
        return m.problem()

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with_fixed = minimize(problem(True), MinimizeOptions(parallel=False))
    without = minimize(problem(False), MinimizeOptions(parallel=False))
    assert with_fixed.status == without.status == "optimal"
    assert with_fixed.lower_bound <= without.objective + 1e-9 and without.lower_bound <= with_fixed.objective + 1e-9


BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks" / "problems"


def test_a_new_incumbent_moves_into_the_equalities_tolerance_where_the_slack_is_large():
    """HS039 (min -x1, x2 = x1^3 + x3^2, x1^2 = x2 + x4^2; optimum -1 at (1, 1, 0, 0), both
    multipliers -1): the Lagrangian's slack, 2 feas_tol, is twice the gap tolerance, so the search
    proves it only against a point that lies below -1 by nearly that much. The local solve's optimum
    is moved there, verified (|h| <= feas_tol, rigorously); every feasible point has x1 <= 1 + 2 tol
    + O(tol^2), so f cannot lie further below. G05's slack is 0.3 % of the gap: its point stays put."""
    tol = 1e-6
    problem = load_problem(str(BENCHMARKS / "hs039.json"))
    incumbent = _Incumbent(problem, tol)
    solver = _LocalSolver(problem, incumbent)
    assert solver.run(np.array([0.9, 0.8, 0.1, 0.1])) is not None
    point = evaluate_point(problem.tape, incumbent.x)
    assert is_feasible(point, tol) and point.f_hi == incumbent.value
    assert -1 - 2 * tol - 1e-11 <= incumbent.value < -1 - 1.9 * tol
    result = minimize(problem, MinimizeOptions(parallel=False))
    assert result.status == "optimal" and result.nodes <= 20  # 4,065 without the move
    assert -1 - 2 * tol - 1e-6 - 1e-11 <= result.lower_bound <= result.objective < -1 - 1.9 * tol

    problem = load_problem(str(BENCHMARKS / "C-g05-cec2006.json"))
    incumbent = _Incumbent(problem, tol)
    solver = _LocalSolver(problem, incumbent)
    assert solver.run(problem.x_optimum + 1.0) is not None
    assert incumbent.value >= solver.best_found - 1e-9 * abs(solver.best_found)


def test_a_local_solve_starts_in_the_lowest_open_box_that_holds_no_known_optimum():
    """Open boxes around the optima whose Lagrangians bound are passed over (a solve there would
    most likely find that optimum again), the lowest of the others below the level taken."""
    boxes = _OpenBoxes(100, 2)
    for lb, left in ((-9.0, 0.0), (-8.0, 1.0), (-10.0, 2.0), (-7.0, 3.0)):
        boxes.push(lb, np.array([left, 0.0]), np.array([left + 1.0, 1.0]), diving=False)
    known = np.array([[0.5, 0.5], [2.5, 0.25]])
    assert np.array_equal(boxes.lowest_centre_without(known, level=0.0), [1.5, 0.5])
    assert np.array_equal(boxes.lowest_centre_without(known[:1], level=0.0), [2.5, 0.5])
    assert boxes.lowest_centre_without(known, level=-8.0) is None  # the others are at or above it


def test_g13s_boxes_do_not_hang_on_which_optimum_a_local_solve_finds():
    """G13 took 6,097 boxes, but 9,733 with feas_tol 1.01e-6: its later solves all started near
    the first two of its four optima, and the others' Lagrangian came late."""
    problem = load_problem(str(BENCHMARKS / "C-g13-cec2006.json"))
    for feas_tol in (1e-6, 1.01e-6):
        result = minimize(problem, MinimizeOptions(parallel=False, feas_tol=feas_tol, node_limit=20000))
        assert result.status == "optimal" and result.nodes < 7000 and result.lower_bound <= problem.optimum


def test_fs_second_order_bound_gives_way_to_the_lagrangians(monkeypatch):
    """Once Lagrangians bound, f's own second-order bound is no longer computed, L's is (on the
    constrained problems it pruned no box theirs did not: the same boxes, a quarter less time on
    HS056)."""
    import pbbflow.spatial.explorer as explorer

    problem = load_problem(str(BENCHMARKS / "hs056.json"))
    real, calls, state = explorer.second_order_bounds, [], {}

    def recorded(tape, *rest):
        exploration = state.get("exploration")
        calls.append((tape is problem.tape, bool(exploration is not None and exploration._lagrangians)))
        return real(tape, *rest)

    monkeypatch.setattr(explorer, "second_order_bounds", recorded)
    state["exploration"] = exploration = Exploration(problem, MinimizeOptions(parallel=False))
    exploration.run(node_limit=300)
    assert exploration._lagrangians and (True, False) in calls and (False, True) in calls
    assert (True, True) not in calls
