"""The Lagrangian bound: its tape, its multipliers, and bounds that stay valid with any weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from spatial_helpers import circle_problem

from pbbflow.spatial import Model, exp, sin
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.bounds import bound_boxes
from pbbflow.spatial.floateval import evaluate_float
from pbbflow.spatial.lagrangian import lagrangian_bound, multipliers
from pbbflow.spatial.options import MinimizeOptions


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
