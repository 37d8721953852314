"""Benchmark: B&B nodes and seconds against the number of subdomains per box, as JSON (the shape
of the interval seed paper's Figure 6(b) and 6(c)).

For each subdomain budget (N^d uniform subdomains per box; 1 is the paper's "single interval"
baseline) and each of serial (one thread) and parallel (numba's threads) bounding, ``minimize``
runs to eps_abs = eps_rel = 1e-6 (default: the peaks ANN), ``--repeats`` times in alternating
order after a warm-up that loads the numba code; the median seconds are reported with the nodes,
the local solves and the certified lower bound.  ``speedup_vs_single_interval`` divides the
single-interval time by each budget's (serial with serial, parallel with parallel).

    python benchmarks/spatial_subdomains.py > benchmarks/results/spatial_subdomains_peaks_ann.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys

from pbbflow.spatial.bnb import MinimizeOptions, minimize
from pbbflow.spatial.load import load_problem

BUDGETS = (1, 4, 16, 64, 256, 1024, 4096, 16384)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?", default="peaks-ann")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=300.0)
    args = parser.parse_args()
    problem = load_problem(args.problem)
    for parallel in (False, True):
        minimize(problem, MinimizeOptions(parallel=parallel, node_limit=8))  # load the numba code first
    runs: dict[tuple[int, bool], list] = {(b, p): [] for b in args.budgets for p in (False, True)}
    for repeat in range(args.repeats):
        keys = list(runs) if repeat % 2 == 0 else list(runs)[::-1]
        for budget, parallel in keys:
            options = MinimizeOptions(subdomains=budget, parallel=parallel, time_limit=args.time_limit)
            runs[budget, parallel].append(minimize(problem, options))
    rows = []
    for (budget, parallel), results in runs.items():
        last = results[-1]
        rows.append({
            "budget": budget, "subdomains": last.subdomains, "parallel": parallel, "status": last.status,
            "nodes": last.nodes, "local_solves": last.local_solves, "lower_bound": last.lower_bound,
            "objective": last.objective, "seconds_median": statistics.median(r.elapsed_s for r in results),
            "seconds": [round(r.elapsed_s, 4) for r in results],
        })
    for row in rows:
        base = next(r for r in rows if r["budget"] == min(args.budgets) and r["parallel"] == row["parallel"])
        row["speedup_vs_single_interval"] = round(base["seconds_median"] / row["seconds_median"], 2)
    print(json.dumps({
        "benchmark": "spatial_subdomains",
        "command": "python benchmarks/spatial_subdomains.py " + " ".join(sys.argv[1:]),
        "problem": problem.name,
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor(), "python": platform.python_version(),
                    "numba_threads": int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1))},
        "settings": {"eps_abs": 1e-6, "eps_rel": 1e-6, "bound": "both", "repeats": args.repeats},
        "runs": rows,
    }, indent=1))


if __name__ == "__main__":
    main()
