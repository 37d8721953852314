"""Benchmark: the effect of iterated greedy on the proof, as JSON.

Solves each instance twice on one cluster (local GPUs when present, else local CPU workers):
from NEH's schedule with no heuristic task, and from a short iterated greedy run with the
default heuristic tasks beside the search (one per GPU worker).  Seconds include the initial
heuristic; each solve stops at ``--time-limit`` (status ``limit``).

    python benchmarks/heuristic_effect.py --instances ta021 ta022 --time-limit 60
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from pbbflow.core.devices import gpu_count
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.load import load_instance
from pbbflow.workflow.cluster import open_cluster
from pbbflow.workflow.run import drive

VARIANTS = {"neh_alone": ("neh", 0), "iterated_greedy": ("ig", None)}


def warm_up(names: list[str]) -> None:
    """Load the numba code (and the GPU kernels where there is a GPU) in this worker."""
    from pbbflow.flowshop.explorer import explore
    from pbbflow.flowshop.iterated_greedy import iterated_greedy

    p = load_instance("ta001").p
    iterated_greedy(p, iterations=2)
    explore(p, WorkUnit.full(20), 1278)
    if gpu_count():
        from pbbflow.gpu.flowshop.explorer import compile_kernels

        for name in names:  # one kernel per machine count
            compile_kernels(load_instance(name).p)


def solve(client, name: str, variant: str, time_limit: float, folder: Path) -> dict:
    initial, heuristics = VARIANTS[variant]
    started = time.perf_counter()
    store = create_flowshop_run(
        folder / f"{name}-{variant}.zarr", load_instance(name), ub=None, bound="lb1", branch="minmin", initial=initial
    )
    result = drive(store, client, time_limit=time_limit, heuristics=heuristics)
    return {
        "instance": name,
        "variant": variant,
        "status": result["status"],
        "makespan": result["makespan"],
        "initial_makespan": store.options["initial_makespan"],
        "nodes": result["nodes"],
        "seconds": round(time.perf_counter() - started, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", nargs="+", default=[f"ta0{i}" for i in range(21, 31)])
    parser.add_argument("--time-limit", type=float, default=60.0, help="per solve, seconds")
    parser.add_argument("--neh-time-limit", type=float, default=None, help="per solve from NEH (default: --time-limit)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args()
    gpus = gpu_count()
    with tempfile.TemporaryDirectory() as folder, open_cluster("local", gpus=gpus) as client:
        client.run(warm_up, args.instances)
        runs = []
        for name in args.instances:  # the variants alternate, so that both see the same machine load
            for variant in args.variants:
                limit = args.neh_time_limit if variant == "neh_alone" and args.neh_time_limit else args.time_limit
                runs.append(solve(client, name, variant, limit, Path(folder)))
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)  # progress, in case of a kill
    totals = {
        v: {
            "seconds": round(sum(r["seconds"] for r in runs if r["variant"] == v), 3),
            "proved": sum(r["status"] != "limit" for r in runs if r["variant"] == v),
        }
        for v in args.variants
    }
    print(
        json.dumps(
            {
                "benchmark": "heuristic_effect",
                "gpus": gpus,
                "time_limit_s": args.time_limit,
                "neh_time_limit_s": args.neh_time_limit or args.time_limit,
                "totals": totals,
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
