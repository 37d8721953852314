"""First incumbents (spatial/first.py): the candidate grid, the local starts, and problems whose
root bound is the optimum proved at the root, with the sampling oracle holding before the first split."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from spatial_oracle import Oracle

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.explorer import Exploration
from pbbflow.spatial.first import FIRST_GRID, FIRST_LOCAL_SOLVES, first_candidates, local_starts
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

PROBLEMS = Path(__file__).resolve().parents[2] / "benchmarks" / "problems"
SYMMETRIC = ["rastrigin-5", "griewank-5", "ackley-2"]  # root bound = optimum, optimum at the centre


def _load(stem: str):
    return load_problem(str(PROBLEMS / f"{stem}.json"))


def test_the_candidates_are_the_centre_then_the_grid_midpoints():
    lower, upper = np.array([-1.0, 0.0]), np.array([1.0, 3.0])
    points = first_candidates(lower, upper, 3)
    assert points.shape == (10, 2)
    np.testing.assert_array_equal(points[0], [0.0, 1.5])
    xs, ys = [-2 / 3, 0.0, 2 / 3], [0.5, 1.5, 2.5]
    expected = {(round(x, 12), round(y, 12)) for x in xs for y in ys}
    assert {(round(x, 12), round(y, 12)) for x, y in points[1:]} == expected


def test_the_grid_is_coarsened_to_the_cap():
    lower, upper = np.zeros(5), np.ones(5)
    points = first_candidates(lower, upper, 10)  # 10^5 subdomains: 4^5 = 1024 midpoints
    assert points.shape == (1 + FIRST_GRID, 5)
    assert np.all((points > lower) & (points < upper))
    np.testing.assert_array_equal(np.unique(points[1:, 0]), [0.125, 0.375, 0.625, 0.875])
    assert first_candidates(lower, upper, 2, cap=8).shape == (1 + 1, 5)  # 1^5 <= 8 < 2^5


def test_local_starts_are_the_best_distinct_feasible_points():
    points = np.array([[0.0], [1.0], [2.0], [1.0], [3.0], [4.0]])
    values = np.array([5.0, 1.0, np.nan, 1.0, 0.5, 2.0])
    np.testing.assert_array_equal(local_starts(points, values), [[3.0], [1.0], [4.0]])
    np.testing.assert_array_equal(local_starts(points, values, count=2, skip=np.array([3.0])), [[1.0], [4.0]])
    assert local_starts(points, np.full(6, np.nan)).shape == (0, 1)
    assert local_starts(points, values, count=0).shape == (0, 1)


@pytest.mark.parametrize("stem", SYMMETRIC)
def test_a_root_bound_at_the_optimum_is_proved_in_a_handful_of_nodes(stem):
    """Without first incumbents the first one is a local minimum and the search splits for long;
    with them the centre meets the root's bound: optimal in at most 3 boxes, no local solve."""
    problem = _load(stem)
    result = minimize(problem, MinimizeOptions(parallel=False))
    before = minimize(problem, MinimizeOptions(parallel=False, first_incumbents=False))
    assert result.status == before.status == "optimal"
    assert result.nodes <= 3 < 40 <= before.nodes
    assert result.local_solves == 0
    tolerance = max(1e-6, 1e-6 * abs(problem.optimum))
    assert result.lower_bound <= problem.optimum <= result.objective <= problem.optimum + tolerance


@pytest.mark.parametrize("stem", [*SYMMETRIC, "peaks"])
@pytest.mark.parametrize("options", [{}, {"subdomains": 4, "contract": False, "local_solves": False}])
def test_no_point_below_the_level_is_lost_before_or_after_the_first_split(stem, options):
    """The oracle right after the root (first incumbents tried) and at the end, on the CPU."""
    problem = load_problem("peaks") if stem == "peaks" else _load(stem)
    oracle = Oracle(problem, [problem.x_optimum], seed=len(stem), count=1000)
    exploration = Exploration(problem, MinimizeOptions(parallel=False, **options))
    assert exploration.incumbent.x is not None  # the centre, a grid point or a local solve
    oracle.check(exploration.remaining(), exploration.level, exploration.settled_lb)
    local = exploration.local
    assert local is None or local.count <= 1 + FIRST_LOCAL_SOLVES
    report = exploration.run(node_limit=5000)
    assert report.done
    oracle.check(exploration.remaining(), exploration.level, exploration.settled_lb)
    assert exploration.lower_bound <= problem.optimum + 1e-12
