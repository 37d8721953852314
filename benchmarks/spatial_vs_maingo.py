"""Benchmark: pbbflow's spatial B&B against MAiNGO, side by side on one core, as JSON.

For each problem (the JSON files of a folder, default ``../shared/data/spatial``, plus the
built-in ``peaks-ann``): pbbflow ``minimize`` on one thread (``parallel=False``, after a warm-up
solve that loads its numba code) and MAiNGO (``benchmarks/maingo_reference.py``, serial), both to
eps_abs = eps_rel = 1e-6 with equalities within 1e-6, alternating which goes first, ``--repeats``
times; the median seconds are reported with nodes, value, certified lower bound and gap, and
whether pbbflow's lower bound stays at or below the file's ``optimum`` (a bound above it is a bug).

    pip install maingopy
    python benchmarks/spatial_vs_maingo.py --repeats 3 > benchmarks/results/spatial_vs_maingo.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maingo_reference import solve_with_maingo  # noqa: E402

from pbbflow.spatial.bnb import MinimizeOptions, minimize  # noqa: E402
from pbbflow.spatial.load import load_problem  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spatial"


def _pbbflow(problem, subdomains: int, time_limit: float) -> dict:
    options = MinimizeOptions(subdomains=subdomains, parallel=False, time_limit=time_limit)
    started = time.perf_counter()
    result = minimize(problem, options)
    seconds = time.perf_counter() - started
    return {**result.to_json(), "seconds": seconds}


def compare(problem, subdomains: int, repeats: int, time_limit: float) -> dict:
    ours, theirs = [], []
    for i in range(repeats):
        order = [("ours", ours), ("maingo", theirs)]
        for name, runs in order if i % 2 == 0 else order[::-1]:
            if name == "ours":
                runs.append(_pbbflow(problem, subdomains, time_limit))
            else:
                runs.append(solve_with_maingo(problem.tape, problem.lower, problem.upper, time_limit=time_limit))
    mine, maingo = ours[-1], theirs[-1]
    optimum = problem.optimum
    valid = None
    if optimum is not None and mine["lower_bound"] is not None:
        valid = mine["lower_bound"] <= optimum + 1e-12 * max(1.0, abs(optimum))
    return {
        "problem": problem.name,
        "optimum": optimum,
        "pbbflow": {
            "status": mine["status"], "objective": mine["objective"], "lower_bound": mine["lower_bound"],
            "gap_abs": mine["gap_abs"], "nodes": mine["nodes"], "subdomains": mine["subdomains"],
            "local_solves": mine["local_solves"], "seconds_median": statistics.median(r["seconds"] for r in ours),
            "seconds": [round(r["seconds"], 4) for r in ours], "lower_bound_at_or_below_optimum": valid,
        },
        "maingo": {
            "status": maingo["status"], "objective": maingo.get("objective"), "lower_bound": maingo.get("lower_bound"),
            "gap_abs": maingo.get("gap_abs"), "nodes": maingo.get("nodes"),
            "seconds_median": statistics.median(r["seconds"] for r in theirs) if "seconds" in maingo else None,
            "seconds": [round(r["seconds"], 4) for r in theirs if "seconds" in r], "reason": maingo.get("reason"),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of problem JSON files")
    parser.add_argument("--subdomains", type=int, default=64, help="per box (default: 64, as pbbflow minimize)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("problems", nargs="*", help="problem specs (default: every file of --data and peaks-ann)")
    args = parser.parse_args()
    specs = args.problems or [*sorted(str(p) for p in args.data.glob("[BC]*.json")), "peaks-ann"]
    problems = [load_problem(spec) for spec in specs]
    minimize(problems[-1], MinimizeOptions(parallel=False, node_limit=8))  # load the numba code first
    rows = [compare(problem, args.subdomains, args.repeats, args.time_limit) for problem in problems]
    print(json.dumps({
        "benchmark": "spatial_vs_maingo",
        "command": "python benchmarks/spatial_vs_maingo.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor(), "python": platform.python_version()},
        "settings": {"eps_abs": 1e-6, "eps_rel": 1e-6, "feas_tol": 1e-6, "one_core": True,
                     "subdomains": args.subdomains, "repeats": args.repeats},
        "problems": rows,
    }, indent=1))


if __name__ == "__main__":
    main()
