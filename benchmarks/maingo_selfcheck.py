"""Self-check of the MAiNGO reference on hand-built tapes, as JSON lines.

For each problem of ``spatial_hand_tapes.PROBLEMS``: the known optimum, the tape's value at the
file's x_optimum (checks the tape), MAiNGO's value, lower bound, nodes and seconds. Then the
every-operation tape: MAiNGO's own evaluation of the model against a float64 walk of the tape at
random points (checks the instruction translation, ops the problems do not use included), and its
solve; then the atan2 tape, which must come back unsupported.

    PYTHONPATH=/tmp/pkg-maingo python benchmarks/maingo_selfcheck.py
"""

from __future__ import annotations

import json

import maingopy
import numpy as np
from maingo_reference import solve_with_maingo, tape_to_maingo
from spatial_hand_tapes import PROBLEMS, atan2_problem, evaluate_at, every_operation


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
    for make in PROBLEMS:
        print(json.dumps(check_problem(make())), flush=True)
    print(json.dumps(check_translation()), flush=True)
    problem = atan2_problem()
    result = solve_with_maingo(problem.tape, problem.lower, problem.upper)
    print(json.dumps({"problem": problem.name, "status": result["status"], "reason": result.get("reason")}))


if __name__ == "__main__":
    main()
