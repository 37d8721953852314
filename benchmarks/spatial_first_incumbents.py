"""Benchmark: the CPU's nodes and seconds without and with first incumbents (spatial/first.py),
side by side in one run, over every test problem, as JSON.

Each problem file of ``../shared/data/spatial`` and ``benchmarks/problems`` and the built-in
``peaks-ann`` is minimized to 1e-6 on one thread at the default subdomain budget, with
``first_incumbents`` off ("old") and on ("new"), ``--repeats`` times in alternating order after a
warm-up that loads the numba code; per problem and variant the status, nodes, local solves, the
median seconds, and whether the lower bound stayed at or below the file's optimum.

    python benchmarks/spatial_first_incumbents.py [--data ../shared/data/spatial] > benchmarks/results/spatial_first_incumbents_2026-12-04.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from pathlib import Path

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data" / "spatial"
VARIANTS = {"old": False, "new": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--data", type=Path, default=DATA, help="the shared problem files (default: %(default)s)")
    args = parser.parse_args()
    specs = [
        *sorted(str(p) for p in args.data.glob("[BC]*.json")),
        *sorted(str(p) for p in (HERE / "problems").glob("*.json")),
        "peaks-ann",
    ]
    minimize(load_problem("peaks-ann"), MinimizeOptions(parallel=False, node_limit=5))
    rows = []
    for spec in specs:
        problem = load_problem(spec)
        runs: dict[str, list] = {name: [] for name in VARIANTS}
        for repeat in range(args.repeats):
            for name in list(VARIANTS) if repeat % 2 == 0 else list(VARIANTS)[::-1]:
                options = MinimizeOptions(parallel=False, time_limit=args.time_limit, first_incumbents=VARIANTS[name])
                runs[name].append(minimize(problem, options))
        row = {"problem": problem.name, "optimum": problem.optimum}
        for name, results in runs.items():
            last = results[-1]
            row[name] = {
                "status": last.status,
                "nodes": last.nodes,
                "local_solves": last.local_solves,
                "objective": last.objective,
                "lower_bound": last.lower_bound,
                "seconds_median": round(statistics.median(r.elapsed_s for r in results), 4),
                "seconds": [round(r.elapsed_s, 4) for r in results],
                "valid": bool(last.lower_bound <= problem.optimum + 1e-12 * max(1.0, abs(problem.optimum))),
            }
        rows.append(row)
    proved = [r for r in rows if r["old"]["status"] == r["new"]["status"] == "optimal"]
    summary = {
        name: {
            "total_seconds_proved_by_both": round(sum(r[name]["seconds_median"] for r in proved), 4),
            "total_nodes_proved_by_both": sum(r[name]["nodes"] for r in proved),
            "not_proved": [r["problem"] for r in rows if r[name]["status"] != "optimal"],
            "all_valid": all(r[name]["valid"] for r in rows),
        }
        for name in VARIANTS
    }
    # nodes compared where both proved optimality (a run stopped at the time limit counts throughput)
    summary["fewer_nodes"] = [r["problem"] for r in proved if r["new"]["nodes"] < r["old"]["nodes"]]
    summary["more_nodes"] = [r["problem"] for r in proved if r["new"]["nodes"] > r["old"]["nodes"]]
    print(
        json.dumps(
            {
                "benchmark": "spatial_first_incumbents",
                "command": "python benchmarks/spatial_first_incumbents.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor(),
                    "python": platform.python_version(),
                    "note": "a loaded 2-core machine (a CI soak and other jobs ran beside it)",
                },
                "settings": {
                    "eps_abs": 1e-6,
                    "eps_rel": 1e-6,
                    "subdomains": MinimizeOptions().subdomains,
                    "parallel": False,
                    "time_limit_s": args.time_limit,
                    "repeats": args.repeats,
                    "variants": {"old": "first_incumbents=False", "new": "first_incumbents=True"},
                },
                "summary": summary,
                "runs": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
