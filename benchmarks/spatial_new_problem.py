"""Benchmark: what a new problem costs in compiling and loading numba code, on the GPU or the CPU, as JSON.

Each problem runs in a fresh Python process, one after another, so that numba's disk cache is all
that carries over (as for a user who runs ``pbbflow minimize`` on a new model). In each process:
import, create the CUDA context (``--backend gpu``), then ``minimize_gpu`` (or ``minimize`` on one
CPU thread) twice with the same node limit; ``kernel_s`` = the first call's seconds minus the
second's is the compiling (cold cache) or the loading (warm cache) of the code. The first problem of a run on a fresh machine compiles; every
later one shows what a new problem costs where pbbflow has compiled before. Per problem also the
tape's size, the status and bounds of the second call, and for files with ``best_known`` (a
sampled value: an upper bound of the minimum) whether the lower bound stayed at or below it.

    python benchmarks/spatial_new_problem.py peaks-ann ../shared/data/spatial/B6-booth.json \
        benchmarks/networks/*.json > benchmarks/results/spatial_gpu_compile_h200.json
    python benchmarks/spatial_new_problem.py --backend cpu peaks-ann ... > ...
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path


def child(spec: str, backend: str, node_limit: int, time_limit: float) -> dict:
    """One problem in this (fresh) process."""
    began = time.perf_counter()
    from pbbflow.spatial.load import load_problem
    from pbbflow.spatial.options import MinimizeOptions

    if backend == "gpu":
        from numba import cuda

        from pbbflow.gpu.spatial.bnb import minimize_gpu as solve
    else:
        from pbbflow.spatial.bnb import minimize as solve
    imported = time.perf_counter()
    if backend == "gpu":
        cuda.current_context()
    context = time.perf_counter()
    problem = load_problem(spec)
    options = MinimizeOptions(node_limit=node_limit, time_limit=time_limit, parallel=False)
    seconds = []
    for _ in range(2):
        start = time.perf_counter()
        result = solve(problem, options)
        seconds.append(time.perf_counter() - start)
    best_known = json.loads(Path(spec).read_text()).get("best_known") if spec.endswith(".json") else None
    return {
        "problem": problem.name,
        "slots": problem.tape.size,
        "vars": problem.tape.n_vars,
        "outputs": len(problem.tape.outputs),
        "import_s": round(imported - began, 3),
        "context_s": round(context - imported, 3),
        "first_s": round(seconds[0], 3),
        "second_s": round(seconds[1], 3),
        "kernel_s": round(seconds[0] - seconds[1], 3),
        "status": result.status.value,
        "nodes": result.nodes,
        "lower_bound": result.lower_bound,
        "objective": result.objective,
        "best_known": best_known,
        "lower_bound_at_or_below_best_known": None
        if best_known is None
        else bool(result.lower_bound <= best_known + 1e-9 * max(1.0, abs(best_known))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="+", help="problem files or built-in names, in the order to run")
    parser.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--node-limit", type=int, default=20_000)
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.problems[0], args.backend, args.node_limit, args.time_limit)))
        return
    rows = []
    for spec in args.problems:
        command = [sys.executable, __file__, "--child", spec, "--backend", args.backend]
        command += ["--node-limit", str(args.node_limit)]
        command += ["--time-limit", str(args.time_limit)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            rows.append({"problem": spec, "error": done.stderr.strip().splitlines()[-1:]})
        else:
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    report = {
        "benchmark": "spatial_new_problem",
        "backend": args.backend,
        "host": platform.node(),
        "load_average": os.getloadavg(),
        "node_limit": args.node_limit,
        "time_limit_s": args.time_limit,
        "rows": rows,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
