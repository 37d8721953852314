"""Benchmark: the spatial CPU solver on the problem class before and after a change, as JSON.

Runs ``minimize`` (serial, one thread) on every problem of ``../shared/data/spatial`` and
``benchmarks/problems`` with a time limit, after a warm-up that compiles or
loads the code, and records status, value, bound, nodes and seconds, and the microseconds per
point of the incumbent check (``feasible_values`` on 10,000 random points), under ``--label`` in
``--out`` (other labels there are kept). Which pbbflow ran is recorded too: run it once with the
old package first on ``PYTHONPATH`` and once with the new one.

    PYTHONPATH=OLD python benchmarks/spatial_exact_residual.py --label before --out R.json
    PYTHONPATH=NEW python benchmarks/spatial_exact_residual.py --label after --out R.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"  # ../shared beside the checkout


def problem_files(shared: Path) -> list[Path]:
    """The problem files of the class (JSON documents with an objective; not the ANN)."""
    files = []
    for folder in (shared / "data" / "spatial", HERE / "problems"):
        for path in sorted(folder.glob("*.json")):
            if "objective" in json.loads(path.read_text()):
                files.append(path)
    return files


def point_seconds(problem, n_points: int = 10_000, repeats: int = 5) -> float:
    """Seconds per point of ``feasible_values`` (the incumbent check) on random points of the
    domain, the best of ``repeats`` passes."""
    from pbbflow.spatial.bounds import feasible_values

    rng = np.random.default_rng(0)
    points = problem.lower + (problem.upper - problem.lower) * rng.random((n_points, problem.dimension))
    feasible_values(problem.tape, points[:2], 1e-6)
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        feasible_values(problem.tape, points, 1e-6)
        best = min(best, time.perf_counter() - started)
    return best / n_points


def run_one(path: Path, time_limit: float) -> dict:
    from pbbflow.spatial.bnb import minimize
    from pbbflow.spatial.load import load_problem
    from pbbflow.spatial.options import MinimizeOptions

    problem = load_problem(str(path))
    minimize(problem, MinimizeOptions(node_limit=1, parallel=False))  # compile or load the code
    started = time.perf_counter()
    result = minimize(problem, MinimizeOptions(time_limit=time_limit, parallel=False))
    return {
        "problem": path.stem,
        "optimum": problem.optimum,
        "status": str(result.status),
        "value": result.objective,
        "lower_bound": result.lower_bound,
        "nodes": result.nodes,
        "seconds": round(time.perf_counter() - started, 3),
        "point_us": round(point_seconds(problem) * 1e6, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--only", nargs="*", help="problem file stems (default: all)")
    parser.add_argument("--shared", type=Path, default=SHARED, help=f"the shared folder (default: {SHARED})")
    args = parser.parse_args()
    import pbbflow

    files = [path for path in problem_files(args.shared) if not args.only or path.stem in args.only]
    runs = []
    for path in files:
        runs.append(run_one(path, args.time_limit))
        print(json.dumps(runs[-1]), flush=True)
    document = json.loads(args.out.read_text()) if args.out.exists() else {}
    document[args.label] = {
        "command": " ".join([f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}", sys.executable, *sys.argv]),
        "pbbflow": str(Path(pbbflow.__file__).resolve().parent),
        "time_limit_s": args.time_limit,
        "cores": os.cpu_count(),
        "runs": runs,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
