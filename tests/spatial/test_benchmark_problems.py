"""The benchmark problems of ``benchmarks/problems``: each loads, and its recorded optimum is the
objective at its recorded point, which satisfies the constraints (g <= 0, |h| <= 1e-6)."""

from pathlib import Path

import numpy as np
import pytest

from pbbflow.spatial.floateval import evaluate_float
from pbbflow.spatial.load import load_problem

PROBLEMS = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "problems").glob("*.json"))


def test_the_folder_holds_problems():
    assert len(PROBLEMS) >= 5


@pytest.mark.parametrize("path", PROBLEMS, ids=lambda path: path.stem)
def test_the_recorded_optimum_is_the_objective_at_a_feasible_point(path):
    problem = load_problem(str(path))
    f, g, h = evaluate_float(problem.tape, problem.x_optimum)
    assert f == pytest.approx(problem.optimum, rel=1e-12, abs=1e-12)
    assert np.all(g <= 1e-12)
    assert np.all(np.abs(h) <= 1e-6)
