"""Benchmark: the subdomain budget per box over the class of continuous problems, as JSON (how the
defaults of ``pbbflow minimize --subdomains`` were chosen, on the CPU and on the GPU).

Each problem file of ``../shared/data/spatial`` and ``benchmarks/problems``, and the built-in
``peaks-ann``, is minimized to 1e-6 with each budget (``--time-limit`` each); per budget the
total seconds, the problems not proved, and whether every lower bound stayed at or below its
file's optimum.  On the CPU (one thread) a warm-up solve loads the numba code first; with ``--gpu``
(``minimize_gpu``) each problem is solved once before its budgets (``first_s``: with the kernels'
compile on the first problem, measured).  ``--out FILE`` rewrites the JSON there after every problem.

    python benchmarks/spatial_budgets.py > benchmarks/results/spatial_budgets.json
    python benchmarks/spatial_budgets.py --gpu --budgets 64 256 1024 4096 --time-limit 20 \
        > benchmarks/results/spatial_gpu_budgets_h200.json
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

HERE = Path(__file__).resolve().parent
FOLDERS = (HERE.parents[1] / "shared" / "data" / "spatial", HERE / "problems")


def _specs(folders: list[Path]) -> list[str]:
    return [*sorted(str(p) for folder in folders for p in folder.glob("*.json")), "peaks-ann"]


def _report(args: argparse.Namespace, rows: list[dict], first: dict) -> dict:
    summary = {
        budget: {
            "total_seconds": round(sum(r["seconds"] for r in rows if r["budget"] == budget), 3),
            "proved": sum(r["status"] == "optimal" for r in rows if r["budget"] == budget),
            "not_proved": [r["problem"] for r in rows if r["budget"] == budget and r["status"] != "optimal"],
            "all_valid": all(r["valid"] is not False for r in rows if r["budget"] == budget),
        }
        for budget in args.budgets
    }
    return {
        "benchmark": "spatial_budgets",
        "command": "python benchmarks/spatial_budgets.py " + " ".join(sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "load_average": os.getloadavg(),
        },
        "settings": {
            "eps_abs": 1e-6,
            "eps_rel": 1e-6,
            "backend": "gpu" if args.gpu else "cpu, one thread",
            "time_limit_s": args.time_limit,
        },
        "summary": summary,
        "first_s": first,
        "runs": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="minimize_gpu instead of one CPU thread")
    parser.add_argument("--budgets", type=int, nargs="+", default=[16, 64, 256, 1024])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--folder", type=Path, action="append", help="problem folders (default: both)")
    parser.add_argument("--out", type=Path, help="also write the JSON here after every problem")
    args = parser.parse_args()
    problems = list({p.name: p for p in map(load_problem, _specs(args.folder or list(FOLDERS)))}.values())
    if args.gpu:
        from pbbflow.gpu.spatial.bnb import minimize_gpu as solve
    else:
        solve = minimize
        minimize(load_problem("peaks-ann"), MinimizeOptions(parallel=False, node_limit=5))
    rows, first = [], {}
    for problem in problems:
        if args.gpu:
            began = time.perf_counter()
            solve(problem, MinimizeOptions(subdomains=max(args.budgets), time_limit=args.time_limit))
            first[problem.name] = round(time.perf_counter() - began, 3)
        for budget in args.budgets:
            options = MinimizeOptions(subdomains=budget, parallel=False, time_limit=args.time_limit)
            result = solve(problem, options)
            optimum = problem.optimum
            rows.append(
                {
                    "problem": problem.name,
                    "budget": budget,
                    "subdomains": result.extras["subdomains"],
                    "status": result.status.value,
                    "nodes": result.nodes,
                    "seconds": round(result.elapsed_s, 4),
                    "lower_bound": result.lower_bound,
                    "valid": None
                    if optimum is None
                    else bool(result.lower_bound <= optimum + 1e-12 * max(1.0, abs(optimum))),
                }
            )
        if args.out:
            args.out.write_text(json.dumps(_report(args, rows, first), indent=1))
    print(json.dumps(_report(args, rows, first), indent=1))


if __name__ == "__main__":
    main()
