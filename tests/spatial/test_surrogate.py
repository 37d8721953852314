"""The peaks ANN's error against peaks as built-in problems: values, signs, and a proof of both extremes."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pbbflow.spatial import ProblemError, builtin_names, evaluate_float, load_problem
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.spatial.surrogate import surrogate_error_problem

DATA = Path(__file__).resolve().parents[2] / "spatial" / "data"
NAMES = ("peaks-ann-error-min", "peaks-ann-error-max")


def read(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def ann_minus_peaks(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ANN(x) - peaks(x) in numpy from the bundled weights and peaks' formula, and a scale for its
    rounding: 1 + |ANN| + |peaks| (the difference cancels; the network's own sums are of order 1)."""
    net = read("peaks-ann-2-10-8-1.json")
    a = (2 * (points - net["in_lo"]) / (net["in_hi"] - net["in_lo"]) - 1).T
    for k, (W, b) in enumerate(zip(net["W"], net["b"])):
        a = np.asarray(W) @ a + np.asarray(b)[:, None]
        a = a if k == len(net["W"]) - 1 else np.tanh(a)
    ann = a[0] * net["y_sd"] + net["y_mu"]
    x, y = points[:, 0], points[:, 1]
    peaks = (
        3 * (1 - x) ** 2 * np.exp(-(x**2) - (y + 1) ** 2)
        - 10 * (x / 5 - x**3 - y**5) * np.exp(-(x**2) - y**2)
        - np.exp(-((x + 1) ** 2) - y**2) / 3
    )
    return ann - peaks, 1 + np.abs(ann) + np.abs(peaks)


def test_the_error_problems_are_built_ins():
    assert set(NAMES) <= set(builtin_names())
    for name in NAMES:
        problem = load_problem(name)
        assert problem.name == name and problem.origin == f"builtin:{name}"
        assert problem.lower.tolist() == [-3, -3] and problem.upper.tolist() == [3, 3]
        assert problem.tape.n_ineq == problem.tape.n_eq == 0
        assert evaluate_float(problem.tape, problem.x_optimum)[0] == pytest.approx(problem.optimum, rel=1e-12)
    with pytest.raises(ProblemError, match="peaks-ann-error-max, peaks-ann-error-min"):
        load_problem("peaks-ann-error")


def test_the_objective_is_the_ann_minus_peaks_and_the_two_are_negatives():
    low, high = load_problem("peaks-ann-error-min"), load_problem("peaks-ann-error-max")
    points = np.random.default_rng(15).uniform(-3, 3, size=(300, 2))
    expected, scale = ann_minus_peaks(points)
    for point, error, size in zip(points, expected, scale):
        value = evaluate_float(low.tape, point)[0]
        assert abs(value - error) <= 1e-12 * size
        assert evaluate_float(high.tape, point)[0] == -value


def test_the_builder_refuses_a_mismatched_pair():
    network, peaks = read("peaks-ann-2-10-8-1.json"), read("peaks.json")
    with pytest.raises(ProblemError, match="sign must be 1 or -1"):
        surrogate_error_problem(network, peaks, 2, "e", "e")
    with pytest.raises(ProblemError, match="is not the network's input box"):
        surrogate_error_problem(network, {**peaks, "domain": [[-3, 3], [-2, 3]]}, 1, "e", "e")
    with pytest.raises(ProblemError, match="no constraints"):
        surrogate_error_problem(network, {**peaks, "inequalities": ["x[0]"]}, 1, "e", "e")


@pytest.mark.parametrize("name", NAMES)
def test_both_extremes_are_proved_below_a_dense_grid(name):
    problem = load_problem(name)
    result = minimize(problem, MinimizeOptions())
    assert result.status == "optimal"
    assert result.objective - result.lower_bound <= max(1e-6, 1e-6 * abs(result.objective)) + 1e-15  # UB - eps rounds
    grid = np.linspace(-3, 3, 801)
    points = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)
    sign = 1 if name.endswith("-min") else -1
    sampled = float(np.min(sign * ann_minus_peaks(points)[0]))
    assert result.lower_bound <= sampled + 1e-9  # a rigorous bound is never above a sampled value
    assert result.lower_bound <= problem.optimum <= result.objective + 1e-12
    assert math.isclose(result.objective, problem.optimum, abs_tol=1e-6)
