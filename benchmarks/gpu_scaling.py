"""Benchmark: the workflow on 1, 2, ... local GPUs (LocalCUDACluster) on one fixed tree, as JSON.

Each GPU is one dask-cuda worker running a GPU explorer task of K IVMs; the coordinator
balances the GPUs.  UB = optimum, so every run decomposes the same tree; parallel efficiency
with g GPUs = T(1) / (g T(g)).  Workers compile their kernels (a tiny solve) before the clock
starts; cluster start-up is not timed.

    python benchmarks/gpu_scaling.py --instance ta023 --ub 2326 --gpus 1 2
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from pbbflow.flowshop.family import create_flowshop_run
from pbbflow.flowshop.load import load_instance
from pbbflow.workflow.cluster import open_cluster
from pbbflow.workflow.run import drive


def warm_up(p, branch: str) -> None:
    """Compile the GPU kernels for this instance's size in this worker."""
    from pbbflow.gpu.flowshop.explorer import compile_kernels

    compile_kernels(p, branch)


def run(instance, ub: int, branch: str, gpus: int, ivms: int, folder: Path) -> dict:
    with open_cluster("local", gpus=gpus) as client:
        client.run(warm_up, instance.p, branch)
        store = create_flowshop_run(folder / f"run-{gpus}.zarr", instance, ub=ub, bound="lb1", branch=branch)
        started = time.perf_counter()
        result = drive(store, client, settings={"ivms": ivms})
        seconds = time.perf_counter() - started
    return {
        "gpus": gpus,
        "seconds": round(seconds, 3),
        "nodes": result["nodes"],
        "status": result["status"],
        "nodes_per_s": round(result["nodes"] / seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default="ta023")
    parser.add_argument("--ub", type=int, default=2326)
    parser.add_argument("--branch", default="minmin")
    parser.add_argument("--gpus", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--ivms", type=int, help="IVMs per GPU (default: the size class's)")
    args = parser.parse_args()
    instance = load_instance(args.instance)
    with tempfile.TemporaryDirectory() as folder:
        runs = [run(instance, args.ub, args.branch, g, args.ivms, Path(folder)) for g in args.gpus]
    base = next((r for r in runs if r["gpus"] == 1), None)
    for r in runs:
        r["same_nodes_as_1_gpu"] = base is not None and r["nodes"] == base["nodes"]
        r["efficiency"] = None if base is None else round(base["seconds"] / (r["gpus"] * r["seconds"]), 4)
    print(
        json.dumps(
            {
                "benchmark": "gpu_scaling",
                "instance": args.instance,
                "ub": args.ub,
                "branch": args.branch,
                "ivms": args.ivms,
                "runs": runs,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
