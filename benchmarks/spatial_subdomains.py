"""Benchmark: B&B nodes and seconds against the number of subdomains per box, as JSON (the shape
of the interval seed paper's Figure 6: iterations and wall time against subdomains).

For each subdomain budget (N^d uniform subdomains per box; 1 is the paper's "single interval"
baseline) and each backend — ``serial`` (the CPU, one thread), ``parallel`` (the CPU, numba's
threads), ``gpu`` (``minimize_gpu`` on the current GPU, where one is visible) — ``minimize``
runs to eps_abs = eps_rel = 1e-6 (default: the peaks ANN), ``--repeats`` times in alternating
order after a warm-up that loads the numba code and compiles the GPU kernels; the median seconds
are reported with the nodes, the local solves and the certified lower bound.

- ``speedup_vs_single_interval``: the serial CPU's single-interval time (budget 1) over each
  row's (the seed's baseline: the same bounds and B&B, one core, no partitioning);
- ``speedup_vs_same_backend``: the same backend's budget-1 time over each row's.

    python benchmarks/spatial_subdomains.py > benchmarks/results/spatial_subdomains_peaks_ann.json
    python benchmarks/spatial_subdomains.py --bound nie --backends serial gpu
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys

from pbbflow.core.devices import gpu_count
from pbbflow.spatial.bnb import minimize
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions

BUDGETS = (1, 4, 16, 64, 256, 1024, 4096, 16384)


def _solver(backend: str):
    if backend == "gpu":
        from pbbflow.gpu.spatial.bnb import minimize_gpu

        return minimize_gpu
    return minimize


def _device() -> str | None:
    if not gpu_count():
        return None
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?", default="peaks-ann")
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument(
        "--backends",
        nargs="+",
        choices=("serial", "parallel", "gpu"),
        default=None,
        help="default: serial, parallel, and gpu where one is visible",
    )
    parser.add_argument("--bound", choices=("nie", "mvf", "both"), default="both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=300.0)
    args = parser.parse_args()
    backends = args.backends or ["serial", "parallel"] + (["gpu"] if gpu_count() else [])
    problem = load_problem(args.problem)
    for backend in backends:  # load the numba code and compile the kernels first
        for budget in {min(args.budgets), max(args.budgets)}:
            warm = MinimizeOptions(parallel=backend == "parallel", bound=args.bound, subdomains=budget, node_limit=8)
            _solver(backend)(problem, warm)
    runs: dict[tuple[int, str], list] = {(b, backend): [] for b in args.budgets for backend in backends}
    for repeat in range(args.repeats):
        keys = list(runs) if repeat % 2 == 0 else list(runs)[::-1]
        for budget, backend in keys:
            options = MinimizeOptions(
                subdomains=budget, parallel=backend == "parallel", bound=args.bound, time_limit=args.time_limit
            )
            runs[budget, backend].append(_solver(backend)(problem, options))
    rows = []
    for (budget, backend), results in runs.items():
        last = results[-1]
        rows.append(
            {
                "budget": budget,
                "subdomains": last.subdomains,
                "backend": backend,
                "status": last.status,
                "nodes": last.nodes,
                "local_solves": last.local_solves,
                "lower_bound": last.lower_bound,
                "objective": last.objective,
                "seconds_median": statistics.median(r.elapsed_s for r in results),
                "seconds": [round(r.elapsed_s, 4) for r in results],
            }
        )
    smallest = min(args.budgets)
    single = next((r for r in rows if r["budget"] == smallest and r["backend"] == "serial"), None)
    for row in rows:
        same = next(r for r in rows if r["budget"] == smallest and r["backend"] == row["backend"])
        row["speedup_vs_same_backend"] = round(same["seconds_median"] / row["seconds_median"], 2)
        if single is not None:
            row["speedup_vs_single_interval"] = round(single["seconds_median"] / row["seconds_median"], 2)
    print(
        json.dumps(
            {
                "benchmark": "spatial_subdomains",
                "command": "python benchmarks/spatial_subdomains.py " + " ".join(sys.argv[1:]),
                "problem": problem.name,
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor(),
                    "python": platform.python_version(),
                    "numba_threads": int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1)),
                    "gpu": _device(),
                },
                "settings": {
                    "eps_abs": 1e-6,
                    "eps_rel": 1e-6,
                    "bound": args.bound,
                    "repeats": args.repeats,
                    "time_limit_s": args.time_limit,
                    "single_interval_baseline": f"serial, budget {smallest}",
                },
                "runs": rows,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
