"""Benchmark: the CPU IVM explorer on fixed trees (UB = optimum), printing JSON.

Each configuration runs in a fresh process (so peak RSS is its own) after a warm-up that
compiles or loads the numba code; the timing covers the exploration only.

    python benchmarks/cpu_explorer.py                      # ta011 ta017 ta042 ta050, 1 and 2 threads
    python benchmarks/cpu_explorer.py --instances ta017 --threads 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

# Optimal makespans (../shared/data/taillard/bounds.csv): with UB = optimum the tree is fixed.
OPTIMA = {"ta011": 1582, "ta017": 1484, "ta042": 2867, "ta050": 3065}
# The paper authors' C++ implementation on ta017, UB 1484, LB1, MinMin, one core (issue #2).
REFERENCE_CPP_TA017_NODES_PER_S = 1.90e6


def run_one(instance: str, ub: int, bound: str, branch: str, threads: int) -> dict:
    """Explore the whole tree of ``instance`` with the given UB; return the measurements."""
    from pbbflow.flowshop.explorer import explore
    from pbbflow.flowshop.intervals import WorkUnit
    from pbbflow.flowshop.load import load_instance

    p = load_instance(instance).p
    explore(load_instance("ta001").p, WorkUnit.full(20), 1278, bound=bound, branch=branch)  # warm-up
    started = time.perf_counter()
    result = explore(p, WorkUnit.full(p.shape[0]), ub, bound=bound, branch=branch, threads=threads)
    seconds = time.perf_counter() - started
    if result.remaining or result.best_makespan is not None:
        raise RuntimeError(f"{instance}: UB {ub} is not the optimum or the search did not finish")
    return {
        "instance": instance,
        "ub": ub,
        "bound": bound,
        "branch": branch,
        "threads": threads,
        "nodes": result.nodes,
        "leaves": result.leaves,
        "seconds": round(seconds, 4),
        "nodes_per_s": round(result.nodes / seconds),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", nargs="+", default=list(OPTIMA), choices=list(OPTIMA))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--bound", default="lb1")
    parser.add_argument("--branch", default="minmin")
    parser.add_argument(
        "--one", nargs=5, metavar=("INSTANCE", "UB", "BOUND", "BRANCH", "THREADS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.one:
        instance, ub, bound, branch, threads = args.one
        print(json.dumps(run_one(instance, int(ub), bound, branch, int(threads))))
        return
    runs = []
    for instance in args.instances:
        for threads in args.threads:
            command = [
                sys.executable,
                __file__,
                "--one",
                instance,
                str(OPTIMA[instance]),
                args.bound,
                args.branch,
                str(threads),
            ]
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            runs.append(json.loads(output))
            print(json.dumps(runs[-1]), file=sys.stderr)
    speedups = {}
    for instance in args.instances:
        rates = {r["threads"]: r["nodes_per_s"] for r in runs if r["instance"] == instance}
        if 1 in rates:
            speedups[instance] = {t: round(rate / rates[1], 3) for t, rate in rates.items() if t != 1}
    print(
        json.dumps(
            {
                "benchmark": "cpu_explorer",
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                },
                "reference_cpp_ta017_nodes_per_s_one_core": REFERENCE_CPP_TA017_NODES_PER_S,
                "runs": runs,
                "speedup_vs_1_thread": speedups,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
