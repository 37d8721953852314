"""Self-check of the MAiNGO reference, as JSON lines.

For each problem (the JSON files of ``../shared/data/spatial`` and the built-in ``peaks-ann``): the
known optimum, the tape's value at the file's x_optimum (checks the tape), MAiNGO's value, lower
bound, nodes and seconds.  Then a problem using every operation MAiNGO has: MAiNGO's own
evaluation of the model against pbbflow's float64 evaluation of the tape at random points (checks
the instruction translation), and its solve; then an atan2 problem, which must come back
unsupported.

    python benchmarks/maingo_selfcheck.py
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import maingopy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maingo_reference import solve_with_maingo, tape_to_maingo  # noqa: E402

from pbbflow.spatial import Model, abs, atan2, cos, exp, log, maximum, minimum, pi, relu, sigmoid, sin, sqrt, tan, tanh  # noqa: A004,E402
from pbbflow.spatial.floateval import evaluate_float  # noqa: E402
from pbbflow.spatial.load import load_problem  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spatial"


def evaluate_at(tape, point) -> np.ndarray:
    """f, g and h of ``tape`` at ``point`` in float64, as one array."""
    f, g, h = evaluate_float(tape, np.asarray(point, dtype=np.float64))
    return np.concatenate([[f], g, h])


def every_operation():
    """Every operation MAiNGO supports, on [0.5, 2] x [0.5, 3] x [-1, 2] (optimum unknown)."""
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
        + x
    )
    m.subject_to(x * y - 3.5 <= 0)
    m.subject_to(x + y + z - pi == 0)
    return m.problem()


def atan2_problem():
    """min atan2(x1, x0) on [1, 2]^2: MAiNGO has no atan2, so it must come back unsupported."""
    m = Model("atan2")
    x0, x1 = m.variable(1.0, 2.0), m.variable(1.0, 2.0)
    m.minimize(atan2(x1, x0))
    return m.problem(optimum=math.atan2(1.0, 2.0))


def check_problem(problem) -> dict:
    result = solve_with_maingo(problem.tape, problem.lower, problem.upper)
    objective = result["objective"]
    return {
        "problem": problem.name,
        "optimum": problem.optimum,
        "tape_at_x_optimum": float(evaluate_at(problem.tape, problem.x_optimum)[0]),
        "maingo_value": objective,
        "maingo_minus_optimum": None if objective is None else objective - problem.optimum,
        "lower_bound": result["lower_bound"],
        "status": result["status"],
        "nodes": result["nodes"],
        "lbp_solves": result["lbp_solves"],
        "seconds": round(result["seconds"], 4),
        "maingo_cpu_seconds": result["maingo_cpu_seconds"],
        "x": result["x"],
    }


def check_translation(samples: int = 200, seed: int = 0) -> dict:
    """Largest relative difference between MAiNGO's model evaluation and the tape's, and its solve."""
    problem = every_operation()
    model = tape_to_maingo(problem.tape, problem.lower, problem.upper)
    solver = maingopy.MAiNGO(model)
    solver.set_option("loggingDestination", int(maingopy.LOGGING_NONE))
    rng = np.random.default_rng(seed)
    worst = 0.0
    for point in rng.uniform(problem.lower, problem.upper, size=(samples, len(problem.lower))):
        theirs = np.array(solver.evaluate_model_at_point(point.tolist())[0])
        ours = evaluate_at(problem.tape, point.tolist())
        worst = max(worst, float(np.max(np.abs(theirs - ours) / np.maximum(1.0, np.abs(ours)))))
    result = solve_with_maingo(problem.tape, problem.lower, problem.upper)
    at_solution = evaluate_at(problem.tape, result["x"])
    return {
        "problem": problem.name,
        "points": samples,
        "max_relative_difference": worst,
        "maingo_value": result["objective"],
        "tape_at_maingo_x": at_solution.tolist(),
        "status": result["status"],
        "lower_bound": result["lower_bound"],
        "nodes": result["nodes"],
        "seconds": round(result["seconds"], 4),
    }


def main() -> None:
    for spec in [*sorted(str(p) for p in DATA.glob("[BC]*.json")), "peaks-ann"]:
        print(json.dumps(check_problem(load_problem(spec))), flush=True)
    print(json.dumps(check_translation()), flush=True)
    problem = atan2_problem()
    result = solve_with_maingo(problem.tape, problem.lower, problem.upper)
    print(json.dumps({"problem": problem.name, "status": result["status"], "reason": result.get("reason")}))


if __name__ == "__main__":
    main()
