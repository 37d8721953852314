"""Benchmark: the Dask workflow against the bare threaded explorer on one fixed tree, as JSON.

Both prove that nothing beats the optimum (UB = optimum: the same tree, the same node count)
using every core of this machine: the bare explorer with one thread per core; the workflow
with a LocalCluster of 1 worker x cores threads and of cores workers x 1 thread, checkpointing
to a Zarr store every 60 s (as by default).  Overhead = workflow seconds / bare seconds - 1.
Like the bare explorer, whose numba code is loaded before the clock starts, the workers load
theirs first (one small solve each); cluster start-up is not timed either.

    python benchmarks/workflow_overhead.py                 # ta026 (UB 2226), about 25 s per run on 2 cores
    python benchmarks/workflow_overhead.py --instance ta017 --ub 1484
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from distributed import Client, LocalCluster

from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.load import load_instance
from pbbflow.workflow.cluster import usable_cores
from pbbflow.workflow.run import drive


def bare(instance, ub: int, threads: int) -> dict:
    started = time.perf_counter()
    result = explore(instance.p, WorkUnit.full(instance.n), ub, threads=threads)
    return {
        "mode": f"bare explorer, {threads} threads",
        "seconds": round(time.perf_counter() - started, 3),
        "nodes": result.nodes,
    }


def warm_up() -> None:
    """Load (or compile) the numba code in this process."""
    explore(load_instance("ta001").p, WorkUnit.full(20), 1278)


def workflow(instance, ub: int, workers: int, threads: int, folder: Path) -> dict:
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=threads, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(warm_up)
        store = create_flowshop_run(
            folder / f"run-{workers}x{threads}.zarr", instance, ub=ub, bound="lb1", branch="minmin"
        )
        started = time.perf_counter()
        result = drive(store, client)
        seconds = time.perf_counter() - started
    return {
        "mode": f"workflow, {workers} worker(s) x {threads} thread(s)",
        "seconds": round(seconds, 3),
        "nodes": result["nodes"],
        "status": result["status"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default="ta026")
    parser.add_argument("--ub", type=int, default=2226)
    parser.add_argument(
        "--shapes",
        nargs="+",
        default=["1xC", "Cx1"],
        help="workers x threads per worker; C stands for the number of cores",
    )
    args = parser.parse_args()
    instance = load_instance(args.instance)
    cores = usable_cores()
    warm_up()
    with tempfile.TemporaryDirectory() as folder:
        runs = [bare(instance, args.ub, cores)]
        for shape in args.shapes:
            workers, threads = (cores if x == "C" else int(x) for x in shape.split("x"))
            runs.append(workflow(instance, args.ub, workers, threads, Path(folder)))
    base = runs[0]["seconds"]
    for run in runs[1:]:
        run["overhead"] = round(run["seconds"] / base - 1, 4)
        run["same_node_count"] = run["nodes"] == runs[0]["nodes"]
    print(
        json.dumps(
            {"benchmark": "workflow_overhead", "instance": args.instance, "ub": args.ub, "cores": cores, "runs": runs},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
