"""Benchmark: spatial B&B with and without FBBT contraction (``MinimizeOptions(contract=...)``), as JSON.

For each problem (the JSON files of a folder, default ``../shared/data/spatial``, plus the
built-in ``peaks-ann``): ``minimize`` on one thread with contraction on, then off, after a
warm-up solve that loads the numba code; nodes, seconds, status, value, certified lower bound
and whether that bound stays at or below the file's ``optimum``.

    python benchmarks/spatial_contract.py --time-limit 60 > benchmarks/results/spatial_contract.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spatial"


def run(problem, contract: bool, time_limit: float) -> dict:
    result = minimize(problem, MinimizeOptions(time_limit=time_limit, parallel=False, contract=contract))
    bound = result.lower_bound
    valid = None if problem.optimum is None else bool(bound <= problem.optimum + 1e-9 * max(1.0, abs(problem.optimum)))
    return {
        "status": result.status,
        "nodes": result.nodes,
        "seconds": round(result.elapsed_s, 3),
        "objective": result.objective,
        "lower_bound": bound,
        "gap_abs": result.gap_abs,
        "open_boxes": result.open_boxes,
        "lower_bound_valid": valid,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    specs = sorted(str(p) for p in args.data.glob("[BC]*.json")) + ["peaks-ann"]
    minimize(load_problem(specs[0]), MinimizeOptions(node_limit=2, parallel=False))  # warm-up
    rows = []
    for spec in specs:
        problem = load_problem(spec)
        with_contract = run(problem, True, args.time_limit)
        without = run(problem, False, args.time_limit)
        rows.append(
            {
                "problem": Path(spec).stem,
                "dimension": problem.dimension,
                "optimum": problem.optimum,
                "contract": with_contract,
                "no_contract": without,
            }
        )
        print(json.dumps(rows[-1]), flush=True, file=sys.stderr)
    print(
        json.dumps(
            {
                "benchmark": "spatial_contract",
                "time_limit_s": args.time_limit,
                "threads": 1,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "date": time.strftime("%Y-%m-%d"),
                "problems": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
