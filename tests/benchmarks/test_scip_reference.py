"""benchmarks/scip_reference.py's translation of tapes into SCIP models (skipped without pyscipopt)."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

pyscipopt = pytest.importorskip("pyscipopt")

from pbbflow.spatial import Model, abs, atan2, cos, exp, log, maximum, minimum, relu, sigmoid, sin, sqrt, tan, tanh  # noqa: A004,E402
from pbbflow.spatial.floateval import evaluate_float  # noqa: E402

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "scip_reference.py"
SPEC = importlib.util.spec_from_file_location("scip_reference", SCRIPT)
scip_reference = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(scip_reference)


def every_operation_but_atan2():
    m = Model("every operation")
    x, y, z = m.variable(0.5, 2.0), m.variable(0.5, 3.0), m.variable(-1.0, 2.0)
    m.minimize(
        sqrt(x)
        + log(y)
        + tanh(z)
        + sin(x * y)
        + cos(z / x)
        + tan(z / 4)
        + abs(z - y)
        + minimum(x, y)
        - maximum(y, z)
        + sigmoid(z) * relu(z - 0.5)
        + x**-2
        - y**3
        + exp(-z)
    )
    m.subject_to(x * y - 3.5 <= 0)
    m.subject_to(x + y + z - 3 == 0)
    return m.problem()


def test_the_translation_evaluates_as_the_tape_at_random_points():
    problem = every_operation_but_atan2()
    model = pyscipopt.Model()
    variables = [model.addVar(lb=lo, ub=hi) for lo, hi in zip(problem.lower, problem.upper)]
    outputs = scip_reference.evaluate_tape(problem.tape, variables)
    assert len(outputs) == 3
    for point in np.random.default_rng(1).uniform(problem.lower, problem.upper, size=(50, 3)):
        solution = model.createSol()
        for variable, value in zip(variables, point):
            model.setSolVal(solution, variable, float(value))
        f, g, h = evaluate_float(problem.tape, point)
        expected = [f, *g, *h]
        for output, value in zip(outputs, expected):
            assert model.getSolVal(solution, output) == pytest.approx(value, rel=1e-12, abs=1e-12)


def test_a_constrained_problem_is_solved_to_its_optimum_with_a_bound_below_it():
    m = Model("circle")  # min x + y on x^2 + y^2 = 2, x <= 1.2: optimum -2 at (-1, -1)
    x, y = m.variable(-2.0, 2.0), m.variable(-2.0, 2.0)
    m.minimize(x + y)
    m.subject_to(x - 1.2 <= 0)
    m.subject_to(x**2 + y**2 - 2 == 0)
    problem = m.problem()
    result = scip_reference.solve_with_scip(problem.tape, problem.lower, problem.upper, time_limit=30.0)
    assert result["status"] in scip_reference.PROVED
    assert result["lower_bound"] <= -2.0
    assert result["objective"] == pytest.approx(-2.0, abs=1e-5)
    assert result["x"] == pytest.approx([-1.0, -1.0], abs=1e-3)


def test_atan2_is_reported_unsupported():
    m = Model("atan2")
    x0, x1 = m.variable(1.0, 2.0), m.variable(1.0, 2.0)
    m.minimize(atan2(x1, x0))
    problem = m.problem(optimum=math.atan2(1.0, 2.0))
    result = scip_reference.solve_with_scip(problem.tape, problem.lower, problem.upper)
    assert result["status"] == "unsupported"
    assert "ATAN2" in result["reason"]
    with pytest.raises(scip_reference.Unsupported):
        scip_reference.tape_to_scip(problem.tape, problem.lower, problem.upper)
