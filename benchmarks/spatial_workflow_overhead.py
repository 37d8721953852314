"""Benchmark: a spatial run through the Dask workflow against the bare exploration, as JSON.

The bare side is ``minimize`` (the CPU exploration, numba-parallel over the cores) or, with
``--gpu``, ``minimize_gpu`` on one GPU; the workflow side is ``pbbflow minimize --run``'s path: a
run store, the local cluster a user gets (one worker with every core as threads, or one GPU
worker with its default side heuristic) and ``drive``, checkpointing every 60 s.  Both load their
code before the clock starts; cluster start-up is reported apart.  The two alternate, ``--repeats``
times each.  Overhead = workflow search seconds / bare seconds - 1 (``overhead_time``: runs to the
end) and bare boxes/s / workflow boxes/s - 1 (``overhead_rate``: also for runs cut by
``--time-limit``); the trees differ a little (incumbents arrive at other times).

    python benchmarks/spatial_workflow_overhead.py        # hs071, eps_abs 1e-7: ~50 s per run on 2 cores
    python benchmarks/spatial_workflow_overhead.py --gpu --eps-abs 1e-10
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from pbbflow.spatial.defaults import CPU_SUBDOMAINS, GPU_SUBDOMAINS
from pbbflow.spatial.family import SpatialRun, first_work
from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions
from pbbflow.workflow.cluster import open_cluster, usable_cores
from pbbflow.workflow.run import create_run, drive

DEFAULT_PROBLEM = Path(__file__).resolve().parents[2] / "shared/data/spatial/C17-hs071-hock-schittkowski-71.json"


def bare(problem, options: MinimizeOptions, gpu: bool) -> dict:
    if gpu:
        from pbbflow.gpu.spatial.bnb import load_code
        from pbbflow.gpu.spatial.bnb import minimize_gpu as minimize
    else:
        from pbbflow.spatial.bnb import load_code, minimize
    load_code(problem, options)
    started = time.perf_counter()
    result = minimize(problem, options)
    return {
        "mode": "bare",
        "seconds": round(time.perf_counter() - started, 3),
        "nodes": result.nodes,
        "status": result.status,
        "lower_bound": result.lower_bound,
        "objective": result.objective,
    }


def workflow(
    problem, options: MinimizeOptions, gpu: bool, folder: Path, index: int, heuristics: int | None = None
) -> dict:
    started = time.perf_counter()
    with open_cluster("local", workers=1, threads_per_worker=usable_cores(), gpus=int(gpu)) as client:
        opened = time.perf_counter()
        instance = SpatialRun.new(problem, options, subdomains=options.subdomains)
        first = first_work(instance)
        store = create_run(
            folder / f"run-{index}.zarr",
            instance,
            work=first.boxes,
            incumbent=first.value,
            solution=first.x,
            settled=first.settled,
            nodes=first.nodes,
        )
        timings: dict[str, float] = {}
        result = drive(store, client, timings=timings, time_limit=options.time_limit, heuristics=heuristics)
    return {
        "mode": "workflow",
        "heuristics": heuristics,
        "seconds": round(timings["search_s"], 3),
        "nodes": result["nodes"],
        "status": result["status"],
        "lower_bound": result["lower_bound"],
        "objective": result["objective"],
        "cluster_s": round(opened - started, 3),
        "final_checkpoint_s": round(timings["final_checkpoint_s"], 3),
        "wall_s": round(time.perf_counter() - started, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", default=str(DEFAULT_PROBLEM))
    parser.add_argument("--eps-abs", type=float, default=1e-7)
    parser.add_argument("--eps-rel", type=float, default=0.0)
    parser.add_argument("--subdomains", type=int, default=None, help="default: pbbflow minimize's, on the CPU or a GPU")
    parser.add_argument("--time-limit", type=float, default=None, help="a cap on each run (seconds)")
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--heuristics",
        type=lambda t: None if t == "default" else int(t),
        nargs="+",
        default=[None],
        help="the workflow's side-heuristic tasks, one workflow run per value each repeat "
        "(default: drive's, one beside each GPU worker)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--commit", default=None, help="the code's commit, where this copy has no git history")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    subdomains = args.subdomains or (GPU_SUBDOMAINS if args.gpu else CPU_SUBDOMAINS)
    options = MinimizeOptions(
        eps_abs=args.eps_abs, eps_rel=args.eps_rel, subdomains=subdomains, time_limit=args.time_limit
    )
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats):
            order = ["bare", *args.heuristics]
            for mode in order if repeat % 2 == 0 else order[::-1]:
                if mode == "bare":
                    run = bare(problem, options, args.gpu)
                else:
                    run = workflow(problem, options, args.gpu, Path(folder), len(runs), heuristics=mode)
                runs.append({"repeat": repeat, **run})
                print(json.dumps(runs[-1]), flush=True)
    seconds = {mode: [r["seconds"] for r in runs if r["mode"] == mode] for mode in ("bare", "workflow")}
    rates = {mode: [r["nodes"] / r["seconds"] for r in runs if r["mode"] == mode] for mode in ("bare", "workflow")}
    by_heuristics = {
        str(h): statistics.median(
            r["nodes"] / r["seconds"] for r in runs if r["mode"] == "workflow" and r["heuristics"] == h
        )
        for h in args.heuristics
    }
    commit = (
        args.commit
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
        ).stdout.strip()
    )
    report = {
        "benchmark": "spatial_workflow_overhead",
        "problem": problem.name,
        "backend": "gpu" if args.gpu else "cpu",
        "cores": usable_cores(),
        "options": {
            "eps_abs": args.eps_abs,
            "eps_rel": args.eps_rel,
            "subdomains": subdomains,
            "time_limit": args.time_limit,
        },
        "code_commit": commit,
        "runs": runs,
        "median_seconds": {k: statistics.median(v) for k, v in seconds.items()},
        "median_boxes_per_s": {k: statistics.median(rates[k]) for k in rates},
        "workflow_boxes_per_s_by_heuristics": by_heuristics,
        "overhead_time": statistics.median(seconds["workflow"]) / statistics.median(seconds["bare"]) - 1,
        "overhead_rate": statistics.median(rates["bare"]) / statistics.median(rates["workflow"]) - 1,
    }
    print(json.dumps(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
