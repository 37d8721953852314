"""The spatial B&B (``pbbflow.spatial.bnb.minimize``) against known optima and dense sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pbbflow.spatial import Model, cos, exp, sin, sqrt
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.floateval import evaluate_float
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions, subdomains_per_dim


def _camel():
    m = Model("six-hump camel")
    x, y = m.variable(-3, 3), m.variable(-2, 2)
    m.minimize((4 - 2.1 * x**2 + x**4 / 3) * x**2 + x * y + (-4 + 4 * y**2) * y**2)
    return m.problem(optimum=-1.0316284534898774)


def _assert_proved(result, optimum: float, options: MinimizeOptions, feas_slack: float = 0.0) -> None:
    """optimal, a certified bound at or below the optimum, an objective within the tolerance above it."""
    tolerance = max(options.eps_abs, options.eps_rel * abs(optimum))
    assert result.status == "optimal", result
    assert result.lower_bound <= optimum + 1e-12 * max(1.0, abs(optimum))
    assert optimum - feas_slack <= result.objective <= optimum + tolerance + 1e-12
    assert result.objective - result.lower_bound <= tolerance * (1 + 1e-9)


def test_subdomains_per_dim_is_the_largest_that_fits_the_budget():
    assert [subdomains_per_dim(1024, d) for d in (1, 2, 3, 4, 10, 11)] == [1024, 32, 10, 5, 2, 1]
    assert subdomains_per_dim(1, 3) == 1 and subdomains_per_dim(27, 3) == 3 and subdomains_per_dim(26, 3) == 2


@pytest.mark.parametrize("bound", ["nie", "mvf", "both"])
def test_each_bound_proves_the_six_hump_camel(bound):
    eps = 1e-4 if bound == "nie" else 1e-6  # NIE's overestimation shrinks linearly with the width: many more boxes
    options = MinimizeOptions(bound=bound, subdomains=64, eps_abs=eps, eps_rel=eps)
    _assert_proved(minimize(_camel(), options), -1.0316284534898774, options)


def test_the_peaks_ann_is_proved_and_serial_equals_parallel():
    problem = load_problem("peaks-ann")
    options = MinimizeOptions(subdomains=256)
    parallel = minimize(problem, options)
    serial = minimize(problem, MinimizeOptions(subdomains=256, parallel=False))
    _assert_proved(parallel, problem.optimum, options)
    assert (serial.nodes, serial.objective, serial.lower_bound) == (
        parallel.nodes,
        parallel.objective,
        parallel.lower_bound,
    )


def test_random_problems_never_get_a_bound_above_a_sampled_value():
    """Random smooth 2-D objectives: the certified bound is at or below every value on a dense grid
    (evaluated in float64, allowed 1e-9 of rounding), and the objective is attained at x."""
    rng = np.random.default_rng(5)
    for trial in range(6):
        a, b, c = rng.uniform(-2, 2, 3)
        m = Model(f"random {trial}")
        x, y = m.variable(-2, 1.5), m.variable(-1, 2)
        m.minimize(a * sin(3 * x + y) + b * exp(-(x**2) - y**2) + c * x * y + 0.1 * cos(5 * y) + sqrt(x**2 + 1))
        problem = m.problem()
        result = minimize(problem, MinimizeOptions(subdomains=16, time_limit=30))
        grid = np.stack(np.meshgrid(np.linspace(-2, 1.5, 141), np.linspace(-1, 2, 121)), -1).reshape(-1, 2)
        sampled = min(evaluate_float(problem.tape, point)[0] for point in grid)
        assert result.status == "optimal"
        assert result.lower_bound <= sampled + 1e-9
        assert result.objective <= sampled + 1e-5  # the optimum is found too
        assert abs(evaluate_float(problem.tape, np.array(result.x))[0] - result.objective) <= 1e-9


def test_an_equality_and_an_inequality():
    """min x + y on the unit circle with y >= x: -sqrt(2) at (-1/sqrt 2, -1/sqrt 2)."""
    m = Model("circle")
    x, y = m.variable(-2, 2), m.variable(-2, 2)
    m.minimize(x + y)
    m.subject_to(x**2 + y**2 == 1)
    m.subject_to(x - y <= 0)
    options = MinimizeOptions(subdomains=64, time_limit=60)
    result = minimize(m.problem(), options)
    _assert_proved(result, -math.sqrt(2), options, feas_slack=2e-6)
    px, py = result.x
    assert abs(px**2 + py**2 - 1) <= 1e-6 and px - py <= 0


def test_an_infeasible_problem_is_proved_infeasible():
    m = Model("empty")
    x, y = m.variable(-1, 1), m.variable(-1, 1)
    m.minimize(x * y)
    m.subject_to(x**2 + y**2 >= 3)  # the box's corners reach 2 only
    result = minimize(m.problem(), MinimizeOptions(subdomains=16))
    assert result.status == "infeasible" and result.objective is None and result.x is None
    assert result.lower_bound == math.inf and result.to_dict()["lower_bound"] is None


def test_limits_stop_with_a_valid_bound():
    problem = load_problem("peaks-ann")
    for options in (MinimizeOptions(node_limit=3), MinimizeOptions(subdomains=1, time_limit=0.01)):
        result = minimize(problem, options)
        assert result.status == "limit" and result.lower_bound <= problem.optimum and result.open_boxes > 0
    stopped = minimize(problem, MinimizeOptions(subdomains=4), should_stop=lambda: True)
    assert stopped.status == "limit" and stopped.nodes == 1  # the root only


def test_a_small_memory_bound_dives_and_still_proves():
    problem = load_problem("peaks")
    options = MinimizeOptions(subdomains=16, max_open=4)
    _assert_proved(minimize(problem, options), -6.551133332835842, options)


def test_progress_reports_certified_bounds():
    problem = load_problem("peaks")
    seen = []
    result = minimize(problem, MinimizeOptions(subdomains=4), progress=seen.append, progress_seconds=0.0)
    assert seen and all(p.lower_bound <= result.objective for p in seen)
    assert [p.nodes for p in seen] == sorted(p.nodes for p in seen)


def test_bad_options_are_refused():
    for bad in (
        {"bound": "mcc"},
        {"eps_abs": -1.0},
        {"feas_tol": math.nan},
        {"subdomains": 0},
        {"time_limit": 0.0},
        {"node_limit": 0},
    ):
        with pytest.raises(ValueError):
            MinimizeOptions(**bad)


def test_an_unbounded_objective_is_never_optimal():
    """1/x on [-1, 1] has no minimum: boxes with a bound of -inf stay open (they are neither
    infeasible nor prunable, even once the incumbent is -DBL_MAX), and the run ends at a limit."""
    m = Model("reciprocal")
    x = m.variable(-1, 1)
    m.minimize(1 / x)
    result = minimize(m.problem(), MinimizeOptions(time_limit=20))
    assert result.status == "limit" and result.lower_bound == -math.inf and result.objective < -1e300
    assert result.to_dict()["lower_bound"] is None and result.gap_abs is None


def test_a_huge_domain_is_not_called_infeasible():
    """x^2 + y^2 - xy on [-1e300, 1e300]^2: the subdomain bounds overflow to -inf there; the box is
    kept. The second-order bound (a constant Hessian, convex) proves the minimum 0 at once."""
    m = Model("huge")
    x, y = m.variable(-1e300, 1e300), m.variable(-1e300, 1e300)
    m.minimize(x**2 + y**2 - x * y)
    result = minimize(m.problem(), MinimizeOptions(node_limit=200, second_order=False))
    assert result.status == "limit" and result.lower_bound <= 0.0
    result = minimize(m.problem(), MinimizeOptions(node_limit=200))
    assert result.status == "optimal" and result.lower_bound <= 0.0 <= result.objective
