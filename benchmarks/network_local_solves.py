"""Benchmark: what an iteration cap on a network objective's local solves saves, as JSON.

Over ``spatial_splits.py``'s network set (every ANN file of ``../shared/data/ann`` and
``benchmarks/networks``, minimized and maximized, and the error problems), ``minimize`` on one
thread (``MinimizeOptions(parallel=False, time_limit=...)``) runs once per cap in
``--caps`` (``spatial.local.NETWORK_SLSQP_ITERATIONS``, set for the run; the caps alternate per
problem). Per problem and cap: status, boxes, local solves, the points the local solver evaluated
f and its Jacobian at (``_LocalSolver.evaluations``), its seconds and the whole solve's. The boxes
must not change where the cap saves evaluations without losing the first incumbents' quality.

    python benchmarks/network_local_solves.py --caps 200 30 --skip "gauss6-6-16-16-1-sigmoid (max)" \\
        > benchmarks/results/network_local_solves_2core.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spatial_splits import problems  # noqa: E402

from pbbflow.spatial import explorer, local  # noqa: E402
from pbbflow.spatial.bnb import run_to_end  # noqa: E402
from pbbflow.spatial.options import MinimizeOptions  # noqa: E402


def one_run(problem, cap: int, time_limit: float) -> dict:
    """One solve with the cap in force (the module's own cap again afterwards): its counters."""
    options = MinimizeOptions(parallel=False, time_limit=time_limit)
    own, local.NETWORK_SLSQP_ITERATIONS = local.NETWORK_SLSQP_ITERATIONS, cap
    try:
        began = time.perf_counter()
        exploration = explorer.Exploration(problem, options)
        result = run_to_end(exploration, began, None, None, 0.5, lambda: {"backend": "cpu"})
    finally:
        local.NETWORK_SLSQP_ITERATIONS = own
    solver = exploration.local
    return {
        "status": str(result.status),
        "nodes": result.nodes,
        "value": result.value,
        "lower_bound": result.lower_bound,
        "local_solves": solver.count,
        "evaluations": solver.evaluations,
        "local_solve_s": round(solver.seconds, 4),
        "seconds": round(time.perf_counter() - began, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caps", type=int, nargs="+", default=[200, 30])
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--skip", nargs="*", default=[], help="problem names left out")
    args = parser.parse_args()
    rows = []
    for problem in problems("networks"):
        if problem.name in args.skip:
            continue
        one_run(problem, args.caps[0], args.time_limit)  # its code loaded (and compiled) first
        rows.append(
            {"problem": problem.name, **{str(cap): one_run(problem, cap, args.time_limit) for cap in args.caps}}
        )
    totals = {str(cap): sum(row[str(cap)]["evaluations"] for row in rows) for cap in args.caps}
    same = all(len({row[str(cap)]["nodes"] for cap in args.caps}) == 1 for row in rows)
    report = {
        "benchmark": "network_local_solves",
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_average": os.getloadavg()},
        "settings": {"caps": args.caps, "time_limit": args.time_limit, "parallel": False},
        "evaluations": totals,
        "same_boxes_everywhere": same,
        "problems": rows,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
