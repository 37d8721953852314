"""Benchmark: what TLS costs the local GPU cluster, side by side in one process, as JSON.

Alternates a LocalCUDACluster (one worker, one GPU) with and without ``Security.temporary()``
``--repeats`` times and measures, for each: the cluster's start, 500 sequential round trips of
a tiny task (the pattern of the explorers' calls), and the search of ta021 with UB = its optimum
(a fixed tree) through ``drive``, after the worker's code is loaded.

    python benchmarks/tls_cost.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from dask_cuda import LocalCUDACluster
from distributed import Client
from distributed.security import Security

from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.taillard import taillard_instance
from pbbflow.flowshop.warmup import warm_worker
from pbbflow.workflow.run import drive
from pbbflow.workflow.worker_code import warm_workers


def measure(tls: bool, folder: Path, index: int) -> dict:
    extra = {"security": Security.temporary(), "protocol": "tls"} if tls else {}
    started = time.perf_counter()
    with (
        LocalCUDACluster(
            host="127.0.0.1", n_workers=1, threads_per_worker=2, resources={"GPU": 1}, dashboard_address=None, **extra
        ) as cluster,
        Client(cluster) as client,
    ):
        start_s = time.perf_counter() - started
        instance = taillard_instance(21)
        warm_workers(client, warm_worker, (instance.p, "lb1", "minmin"))
        began = time.perf_counter()
        for i in range(500):
            client.submit(int, i, pure=False).result()
        round_trip_ms = (time.perf_counter() - began) / 500 * 1e3
        store = create_flowshop_run(folder / f"r{index}-{tls}.zarr", instance, ub=2297, bound="lb1", branch="minmin")
        timings = {}
        result = drive(store, client, timings=timings)
    return {
        "tls": tls,
        "start_s": round(start_s, 3),
        "round_trip_ms": round(round_trip_ms, 3),
        "search_s": round(timings["search_s"], 3),
        "nodes": result["nodes"],
        "status": result["status"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for index in range(args.repeats):
            for tls in (False, True) if index % 2 == 0 else (True, False):
                runs.append(measure(tls, Path(folder), index))
    summary = {}
    for tls in (False, True):
        mine = [r for r in runs if r["tls"] == tls]
        summary["tls" if tls else "tcp"] = {
            k: statistics.median(r[k] for r in mine) for k in ("start_s", "round_trip_ms", "search_s")
        }
    print(
        json.dumps(
            {"benchmark": "tls_cost", "instance": "ta021", "ub": 2297, "runs": runs, "median": summary}, indent=2
        )
    )


if __name__ == "__main__":
    main()
