"""Benchmark: the GPU explorer on Taillard's instances with UB = optimum (or the best known + an offset), as JSON.

With the optimum as UB the tree is fixed, so ``nodes`` is the same for every machine and
explorer; ``--check-cpu`` runs the CPU explorer (all cores) on the named instances and
reports whether the counts agree.  The kernels are compiled for every instance size
before the clock starts.

    python benchmarks/gpu_explorer.py                                  # ta021-ta030, K = 16384
    python benchmarks/gpu_explorer.py --instances ta021 --ivms 4096 16384 32768
    python benchmarks/gpu_explorer.py --instances ta017 --check-cpu ta017
    python benchmarks/gpu_explorer.py --instances ta051 ta056 --ub-offset 1 --max-seconds 60   # 50 x 20, best + 1
    python benchmarks/gpu_explorer.py --instances ta056 --ub-offset 1 --max-seconds 20 --steps auto 32 128
"""

from __future__ import annotations

import argparse
import json
import os
import time

from pbbflow.flowshop.explorer import explore
from pbbflow.flowshop.intervals import WorkUnit
from pbbflow.flowshop.load import load_instance
from pbbflow.gpu.flowshop.explorer import GpuExplorer, compile_kernels, device_summary

# Optimal makespans from ../shared/data/taillard/bounds.csv (optimal=yes rows).
OPTIMA = {
    "ta001": 1278,
    "ta011": 1582,
    "ta017": 1484,
    "ta021": 2297,
    "ta022": 2099,
    "ta023": 2326,
    "ta024": 2223,
    "ta025": 2291,
    "ta026": 2226,
    "ta027": 2273,
    "ta028": 2200,
    "ta029": 2237,
    "ta030": 2178,
}
# The best known makespans of the 50 x 20 class, from the same file (ta056 is optimal; the
# others come from Helbecque 2025's list there), for runs with UB = best known + --ub-offset.
BEST_KNOWN = {
    **OPTIMA,
    "ta051": 3846,
    "ta052": 3699,
    "ta053": 3640,
    "ta054": 3719,
    "ta055": 3610,
    "ta056": 3679,
    "ta057": 3704,
    "ta058": 3691,
    "ta059": 3741,
    "ta060": 3755,
}
# The paper authors' CUDA code on the same H200 model (issue 4): ta021, 495 M nodes in 7.9 s.
REFERENCE_TA021_NODES_PER_S = 63e6


def run_one(
    name: str,
    ivms: int | None,
    max_seconds: float,
    branch: str = "minmin",
    ub_offset: int = 0,
    steps: int | None = None,
) -> dict:
    """One run from the whole of [0, n!); ``steps``: nodes per IVM and launch (None: the explorer's own sizing)."""
    p = load_instance(name).p
    ub = BEST_KNOWN[name] + ub_offset
    explorer = GpuExplorer(p, ivms=ivms, branch=branch)
    explorer.load(WorkUnit.full(p.shape[0]))
    started = time.perf_counter()
    counts = explorer.run(ub, max_seconds=max_seconds, steps=steps)
    seconds = time.perf_counter() - started
    finished = not explorer.remaining()
    return {
        "instance": name,
        "ub": ub,
        "branch": branch,
        "ivms": explorer.k,
        "steps": "auto" if steps is None else steps,
        "last_steps": explorer.steps,
        "finished": finished,
        "improved": explorer.best() is not None,
        "nodes": counts.nodes,
        "leaves": counts.leaves,
        "seconds": round(seconds, 3),
        "nodes_per_s": round(counts.nodes / seconds),
        "launches": counts.launches,
        "ms_per_launch": round(counts.kernel_s / max(counts.launches, 1) * 1000, 3),
        "kernel_share": round(counts.kernel_s / seconds, 4),
        "peak_active_ivms": counts.peak_active,
        "ivm_memory_bytes": explorer.memory_bytes,
    }


def cpu_check(name: str) -> dict:
    p = load_instance(name).p
    threads = len(os.sched_getaffinity(0))
    started = time.perf_counter()
    result = explore(p, WorkUnit.full(p.shape[0]), OPTIMA[name], threads=threads)
    return {
        "instance": name,
        "cpu_threads": threads,
        "cpu_nodes": result.nodes,
        "cpu_seconds": round(time.perf_counter() - started, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", nargs="+", default=[f"ta0{i}" for i in range(21, 31)])
    parser.add_argument("--ivms", nargs="+", type=int, default=[None], help="IVMs per GPU (default: the size class's)")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="per run")
    parser.add_argument("--branch", default="minmin")
    parser.add_argument("--ub-offset", type=int, default=0, help="UB = optimum or best known + this")
    parser.add_argument(
        "--steps", nargs="+", default=["auto"], help="nodes per IVM and launch, or auto (the explorer's own sizing)"
    )
    parser.add_argument("--commit", help="the code's commit, recorded in the JSON")
    parser.add_argument("--check-cpu", nargs="*", default=[], help="instances to count with the CPU explorer too")
    args = parser.parse_args()
    for name in args.instances + args.check_cpu:
        compile_kernels(load_instance(name).p, args.branch)  # before the clock: one kernel per machine count
    runs = [
        run_one(name, ivms, args.max_seconds, args.branch, args.ub_offset, None if steps == "auto" else int(steps))
        for name in args.instances
        for ivms in args.ivms
        for steps in args.steps
    ]
    checks = []
    for name in args.check_cpu:
        check = cpu_check(name)
        gpu_nodes = {r["nodes"] for r in runs if r["instance"] == name and r["finished"]}
        check["same_nodes_as_gpu"] = gpu_nodes == {check["cpu_nodes"]}
        checks.append(check)
    finished = [r for r in runs if r["finished"]]
    print(
        json.dumps(
            {
                "benchmark": "gpu_explorer",
                "commit": args.commit,
                **device_summary(),
                "bound": "lb1",
                "branch": args.branch,
                "ub_offset": args.ub_offset,
                "runs": runs,
                "cpu_checks": checks,
                "total_seconds_finished": round(sum(r["seconds"] for r in finished), 3),
                "finished": len(finished),
                "of": len(runs),
                "reference_paper_ta021_nodes_per_s": REFERENCE_TA021_NODES_PER_S,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
