"""Benchmark: where the workflow's time goes on one GPU, as JSON lines.

Solves one fixed tree (UB = optimum) through the workflow on a LocalCUDACluster of one GPU,
several times, with the worker's ``GpuEngine`` and ``GpuExplorer`` wrapped by timers: time in
``engine.run`` (``kernel_s``: the explore launches' device time; ``steal``: the host's time queuing
the stealing kernels, which run between launches on the device; ``waiting``: the engine's
throttled asks whether others wait), in ``engine.remaining`` (the checkpoint's packing) and in
``engine.load``; the rest of ``seconds`` is the coordinator's round trips, the task start and the
run's close.  Variants (``--variants``, HEURISTICS:BUDGET, ``default`` for the family's heuristic
tasks): by default no iterated greedy task and 2 s between checkpoints, the default iterated
greedy task, 8 s between checkpoints; each ``--reps`` times, in turn.  ``--time-limit`` stops each
run there (a tree too large to finish).  Compare with ``benchmarks/gpu_explorer.py`` on the same tree.

    python benchmarks/gpu_workflow_profile.py --instance ta023 --ub 2326
    python benchmarks/gpu_workflow_profile.py --instance ta056 --ub 3680 --time-limit 45 --reps 1
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

VARIANTS = ("0:2", "default:2", "0:8")  # iterated greedy tasks (default: the family's):seconds between checkpoints


def install_timers() -> None:
    """In the worker: wrap the GPU engine's and explorer's methods with accumulating timers."""
    from pbbflow.flowshop import family
    from pbbflow.gpu.flowshop import explorer as gpu_explorer

    totals: dict = {}
    family.profile_totals = totals

    def timed(name, method):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                totals[name] = totals.get(name, 0.0) + time.perf_counter() - started
                totals[name + "_calls"] = totals.get(name + "_calls", 0) + 1

        return wrapper

    engine = family.GpuEngine
    run_engine = timed("engine_run", engine.run)

    def run_with_timed_asks(self, ub, seconds, report, waiting):
        """engine.run, and the gap since the last one ended (the checkpoint between them)."""
        if "last_end" in totals:  # cleared with the totals: a run's first call has no gap
            gap = time.perf_counter() - totals["last_end"]
            totals["gap_s"] = totals.get("gap_s", 0.0) + gap
            totals["gap_max_s"] = max(totals.get("gap_max_s", 0.0), gap)
        try:
            return run_engine(self, ub, seconds, report, timed("waiting", waiting))
        finally:
            totals["last_end"] = time.perf_counter()

    engine.run = run_with_timed_asks
    engine.remaining = timed("engine_remaining", engine.remaining)
    engine.load = timed("engine_load", engine.load)
    explorer = gpu_explorer.GpuExplorer
    explorer._steal = timed("steal", explorer._steal)
    run = explorer.run

    def counted_run(self, *args, **kwargs):
        counts = run(self, *args, **kwargs)
        totals["kernel_s"] = totals.get("kernel_s", 0.0) + counts.kernel_s
        totals["launches"] = totals.get("launches", 0) + counts.launches
        return counts

    explorer.run = counted_run


def take_totals() -> dict:
    """In the worker: the timers' totals since the last call."""
    from pbbflow.flowshop import family

    totals = dict(family.profile_totals)
    family.profile_totals.clear()
    totals.pop("last_end", None)
    return totals


def warm_up(p) -> None:
    """In the worker: compile the GPU kernels for this instance's size."""
    from pbbflow.gpu.flowshop.explorer import compile_kernels

    compile_kernels(p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default="ta023")
    parser.add_argument("--ub", type=int, default=2326)
    parser.add_argument("--time-limit", type=float, help="seconds of search per run (default: to the end)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, help="HEURISTICS:BUDGET_S each")
    args = parser.parse_args()
    variants = [(None if h == "default" else int(h), float(b)) for h, b in (v.split(":") for v in args.variants)]
    instance = load_instance(args.instance)
    with open_cluster("local", gpus=1) as client:
        client.run(warm_up, instance.p)
        client.run(install_timers)
        for rep in range(1, args.reps + 1):
            for heuristics, budget in variants:
                with tempfile.TemporaryDirectory() as folder:
                    store = create_flowshop_run(
                        Path(folder) / "run.zarr", instance, ub=args.ub, bound="lb1", branch="minmin"
                    )
                    started = time.perf_counter()
                    timings: dict = {}
                    result = drive(
                        store,
                        client,
                        heuristics=heuristics,
                        budget_s=budget,
                        time_limit=args.time_limit,
                        timings=timings,
                    )
                    seconds = time.perf_counter() - started
                (totals,) = client.run(take_totals).values()
                row = {
                    "instance": args.instance,
                    "rep": rep,
                    "heuristics": heuristics,
                    "budget_s": budget,
                    "seconds": round(seconds, 3),
                    "nodes": result["nodes"],
                    "status": str(result["status"]),
                    **{k: round(v, 3) for k, v in timings.items()},
                    **{k: round(v, 3) if isinstance(v, float) else v for k, v in totals.items()},
                }
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
