"""Self-check of the SCIP reference (``scip_reference.py``), as one JSON document.

For each problem (the JSON files of ``../shared/data/spatial`` and ``benchmarks/problems``, and the
built-ins ``peaks-ann``, ``peaks-ann-error-min`` and ``peaks-ann-error-max``): the known optimum,
SCIP's status, value, dual bound, nodes and seconds, the tape's float64 f, max(g) and max|h| at
SCIP's point, and ``agrees``: SCIP's dual bound at or below the optimum, and, where SCIP proved its
gap, its value within the gap of the optimum (only from above with equalities, which SCIP relaxes).  Then a
problem using every operation of the tape but atan2: pyscipopt's evaluation of the translated
expressions against pbbflow's float64 evaluation of the tape at random points (checks the
translation and its identities), and its solve; then an atan2 problem, which must come back
unsupported.  ``summary`` counts the problems that agree; progress goes to stderr.  It reuses
``maingo_selfcheck``'s test problems, so it needs maingopy beside pyscipopt.

    python benchmarks/scip_selfcheck.py [--time-limit 60] [--data ../shared/data/spatial]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pyscipopt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maingo_selfcheck import atan2_problem, evaluate_at, every_operation  # noqa: E402
from scip_reference import PROVED, evaluate_tape, solve_with_scip  # noqa: E402
from spatial_vs_maingo import BUILTINS, DATA, problem_specs  # noqa: E402

from pbbflow.spatial.load import load_problem  # noqa: E402

EPS = 1e-6  # eps_abs = eps_rel = feas_tol of the runs


def _value_agrees(value: float, optimum: float, has_equalities: bool) -> bool:
    """Whether SCIP's proved value matches the optimum: within its gap (eps_abs and eps_rel) above
    it, and as far below; with equalities, which SCIP accepts within 1e-6, any distance below."""
    tolerance = 2 * EPS * max(1.0, abs(optimum))
    return value <= optimum + tolerance and (has_equalities or value >= optimum - tolerance)


def check_problem(problem, time_limit: float) -> dict:
    """SCIP on one problem against its recorded optimum (see the module doc)."""
    result = solve_with_scip(problem.tape, problem.lower, problem.upper, time_limit=time_limit)
    row = {"problem": problem.name, "optimum": problem.optimum, "status": result["status"]}
    if result["status"] in ("unsupported", "error"):
        return {**row, "reason": result["reason"], "agrees": None}
    value, bound, optimum = result["objective"], result["lower_bound"], problem.optimum
    at_x = evaluate_at(problem.tape, result["x"]) if result["x"] is not None else None
    n_ineq = problem.tape.n_ineq
    bound_ok = bound is None or bound <= optimum + 1e-9 * max(1.0, abs(optimum))
    value_ok = None
    if result["status"] in PROVED:
        value_ok = _value_agrees(value, optimum, problem.tape.n_eq > 0)
    return {
        **row,
        "scip_value": value,
        "scip_minus_optimum": None if value is None else value - optimum,
        "lower_bound": bound,
        "lower_bound_at_or_below_optimum": bound_ok,
        "value_agrees": value_ok,
        "agrees": bound_ok and value_ok is not False,
        "tape_f_at_x": None if at_x is None else float(at_x[0]),
        "tape_max_g_at_x": None if at_x is None or n_ineq == 0 else float(max(at_x[1 : 1 + n_ineq])),
        "tape_max_abs_h_at_x": None if at_x is None or problem.tape.n_eq == 0 else float(max(abs(at_x[1 + n_ineq :]))),
        "nodes": result["nodes"],
        "seconds": round(result["seconds"], 4),
        "x": result["x"],
    }


def check_translation(time_limit: float, samples: int = 200, seed: int = 0) -> dict:
    """Largest relative difference between pyscipopt's evaluation of the translation and the tape's."""
    problem = every_operation()
    model = pyscipopt.Model()
    variables = [model.addVar(f"x{i}", lb=lo, ub=hi) for i, (lo, hi) in enumerate(zip(problem.lower, problem.upper))]
    outputs = evaluate_tape(problem.tape, variables)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for point in rng.uniform(problem.lower, problem.upper, size=(samples, len(problem.lower))):
        solution = model.createSol()
        for variable, value in zip(variables, point.tolist()):
            model.setSolVal(solution, variable, value)
        theirs = np.array([model.getSolVal(solution, output) for output in outputs])
        ours = evaluate_at(problem.tape, point.tolist())
        worst = max(worst, float(np.max(np.abs(theirs - ours) / np.maximum(1.0, np.abs(ours)))))
    result = solve_with_scip(problem.tape, problem.lower, problem.upper, time_limit=time_limit)
    return {
        "problem": problem.name,
        "points": samples,
        "max_relative_difference": worst,
        "status": result["status"],
        "scip_value": result["objective"],
        "lower_bound": result["lower_bound"],
        "tape_at_scip_x": None if result["x"] is None else evaluate_at(problem.tape, result["x"]).tolist(),
        "nodes": result["nodes"],
        "seconds": round(result["seconds"], 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per problem")
    parser.add_argument("--data", type=Path, default=DATA, help="folder of problem JSON files (its B*/C* files)")
    args = parser.parse_args()
    load_start = os.getloadavg()
    rows = []
    for spec in [*problem_specs(args.data), *BUILTINS]:
        rows.append(check_problem(load_problem(spec), args.time_limit))
        print(json.dumps({key: rows[-1][key] for key in ("problem", "status", "agrees")}), file=sys.stderr, flush=True)
    translation = check_translation(args.time_limit)
    problem = atan2_problem()
    unsupported = solve_with_scip(problem.tape, problem.lower, problem.upper)
    counted = [row for row in rows if row["agrees"] is not None]
    document = {
        "benchmark": "scip_selfcheck",
        "command": "python benchmarks/scip_selfcheck.py " + " ".join(sys.argv[1:]),
        "scip": str(pyscipopt.Model().version()),
        "pyscipopt": version("pyscipopt"),
        "load_average_1_5_15_min": {"start": load_start, "end": os.getloadavg()},
        "summary": {
            "problems": len(rows),
            "translated": len(counted),
            "agree": sum(row["agrees"] for row in counted),
            "proved": sum(row["status"] in PROVED for row in counted),
        },
        "rows": rows,
        "translation": translation,
        "atan2": {"problem": problem.name, "status": unsupported["status"], "reason": unsupported.get("reason")},
    }
    print(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
