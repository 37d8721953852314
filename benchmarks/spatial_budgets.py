"""Benchmark: the subdomain budget per box over every test problem, as JSON (how the CPU default
of ``pbbflow minimize --subdomains`` was chosen).

Each problem file of ``../shared/data/spatial`` and the built-in ``peaks-ann`` is minimized to
1e-6 on one thread with budgets 16, 64, 256 and 1,024 (60 s limit each), after a warm-up that
loads the numba code; per budget the total seconds, the problems not proved, and whether every
lower bound stayed at or below its file's optimum.

    python benchmarks/spatial_budgets.py > benchmarks/results/spatial_budgets.json
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "spatial"
BUDGETS = (16, 64, 256, 1024)


def main() -> None:
    specs = [*sorted(str(p) for p in DATA.glob("[BC]*.json")), "peaks-ann"]
    minimize(load_problem("peaks-ann"), MinimizeOptions(parallel=False, node_limit=5))
    rows = []
    for spec in specs:
        problem = load_problem(spec)
        for budget in BUDGETS:
            result = minimize(problem, MinimizeOptions(subdomains=budget, parallel=False, time_limit=60.0))
            rows.append(
                {
                    "problem": problem.name,
                    "budget": budget,
                    "subdomains": result.subdomains,
                    "status": result.status,
                    "nodes": result.nodes,
                    "seconds": round(result.elapsed_s, 4),
                    "valid": bool(result.lower_bound <= problem.optimum + 1e-12 * max(1.0, abs(problem.optimum))),
                }
            )
    summary = {
        budget: {
            "total_seconds": round(sum(r["seconds"] for r in rows if r["budget"] == budget), 3),
            "not_proved": [r["problem"] for r in rows if r["budget"] == budget and r["status"] != "optimal"],
            "all_valid": all(r["valid"] for r in rows if r["budget"] == budget),
        }
        for budget in BUDGETS
    }
    print(
        json.dumps(
            {
                "benchmark": "spatial_budgets",
                "command": "python benchmarks/spatial_budgets.py " + " ".join(sys.argv[1:]),
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor(),
                    "python": platform.python_version(),
                },
                "settings": {"eps_abs": 1e-6, "eps_rel": 1e-6, "threads": 1, "time_limit_s": 60.0},
                "summary": summary,
                "runs": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
