"""Benchmark: the CPU explorer with and without its second-order box bound
(``MinimizeOptions.second_order``, :mod:`pbbflow.spatial.second_order`) over the class of continuous
problems, as JSON.

Each problem file of the folders (default ``../shared/data/spatial`` and ``benchmarks/problems``)
and the built-in ``peaks-ann`` is minimized to 1e-6 both ways, ``--repeats`` times in alternating
order after a warm-up solve of each way (numba's code loaded), on one thread (``--parallel``: on
every core, ``pbbflow minimize``'s default). Per run: status, boxes, seconds, bounds and whether the
lower bound stayed at or below the file's optimum; per way: total seconds (medians), problems proved.

    python benchmarks/spatial_second_order.py --time-limit 20 > benchmarks/results/spatial_second_order_2core.json
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

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

HERE = Path(__file__).resolve().parent
FOLDERS = (HERE.parents[1] / "shared" / "data" / "spatial", HERE / "problems")
WAYS = {"off": False, "on": True}


def _specs(folders: list[Path]) -> list[str]:
    return [*sorted(str(p) for folder in folders for p in folder.glob("*.json")), "peaks-ann"]


def _run(problem, options: MinimizeOptions) -> dict:
    started = time.perf_counter()
    result = minimize(problem, options)
    seconds = time.perf_counter() - started
    optimum = problem.optimum
    return {
        "status": str(result.status),
        "boxes": result.nodes,
        "seconds": round(seconds, 4),
        "objective": result.objective,
        "lower_bound": result.lower_bound,
        "valid": None if optimum is None else bool(result.lower_bound <= optimum),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--parallel", action="store_true", help="bound on every core (default: one thread)")
    parser.add_argument("--folder", type=Path, action="append", help="problem folders (default: both)")
    parser.add_argument("--only", nargs="+", help="problems whose file stem contains one of these")
    args = parser.parse_args()
    specs = _specs(args.folder or list(FOLDERS))
    if args.only:
        specs = [s for s in specs if any(word in Path(s).stem for word in args.only)]
    rows = []
    for spec in specs:
        problem = load_problem(spec)
        name = Path(spec).stem
        for on in WAYS.values():  # warm-up: the code of both ways loaded
            minimize(problem, MinimizeOptions(parallel=args.parallel, second_order=on, node_limit=3))
        for repeat in range(args.repeats):
            order = list(WAYS) if repeat % 2 == 0 else list(reversed(WAYS))
            for way in order:
                options = MinimizeOptions(parallel=args.parallel, second_order=WAYS[way], time_limit=args.time_limit)
                row = {"problem": name, "way": way, "repeat": repeat, **_run(problem, options)}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    summary = {}
    for way in WAYS:
        per_problem = {}
        for row in rows:
            if row["way"] == way:
                per_problem.setdefault(row["problem"], []).append(row)
        summary[way] = {
            "total_median_seconds": round(
                sum(statistics.median(r["seconds"] for r in v) for v in per_problem.values()), 3
            ),
            "proved": sum(all(r["status"] == "optimal" for r in v) for v in per_problem.values()),
            "not_proved": sorted(p for p, v in per_problem.items() if any(r["status"] != "optimal" for r in v)),
            "boxes": {p: v[0]["boxes"] for p, v in per_problem.items()},
            "median_seconds": {p: statistics.median(r["seconds"] for r in v) for p, v in per_problem.items()},
            "all_valid": all(r["valid"] is not False for v in per_problem.values() for r in v),
        }
    print(
        json.dumps(
            {
                "benchmark": "spatial_second_order",
                "command": "python benchmarks/spatial_second_order.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor(),
                    "python": platform.python_version(),
                    "load_average": os.getloadavg(),
                },
                "settings": {
                    "eps_abs": 1e-6,
                    "eps_rel": 1e-6,
                    "threads": "every core" if args.parallel else "one",
                    "time_limit_s": args.time_limit,
                },
                "summary": summary,
                "runs": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
