"""Benchmark: a spatial run through the workflow on 1 and on several local GPUs, as JSON.

Each configuration runs ``--repeats`` times, the configurations alternating (``--gpus 2 1``: 2, 1,
1, 2, 2, 1, ...), every run for the same ``--time-limit`` of search on a problem that takes longer
(or to its end without one).  Efficiency = boxes/s on k GPUs / (k x boxes/s on 1 GPU), medians;
with runs to the end, also seconds on 1 / (k x seconds on k).

    python benchmarks/spatial_gpu_scaling.py --gpus 2 1 --time-limit 40 --problem hs071.json --eps-abs 1e-10
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path

from spatial_workflow_overhead import DEFAULT_PROBLEM, workflow

from pbbflow.spatial.load import load_problem
from pbbflow.spatial.options import MinimizeOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problem", default=str(DEFAULT_PROBLEM))
    parser.add_argument("--eps-abs", type=float, default=1e-10)
    parser.add_argument("--eps-rel", type=float, default=0.0)
    parser.add_argument("--subdomains", type=int, default=1024)
    parser.add_argument("--time-limit", type=float, default=None)
    parser.add_argument("--gpus", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--commit", default=None, help="the code's commit, where this copy has no git history")
    args = parser.parse_args()
    problem = load_problem(args.problem)
    options = MinimizeOptions(
        eps_abs=args.eps_abs, eps_rel=args.eps_rel, subdomains=args.subdomains, time_limit=args.time_limit
    )
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats):
            order = args.gpus if repeat % 2 == 0 else args.gpus[::-1]
            for gpus in order:
                run = workflow(problem, options, gpus, Path(folder), len(runs))
                runs.append({"repeat": repeat, "gpus": gpus, **run, "boxes_per_s": run["nodes"] / run["seconds"]})
                print(json.dumps(runs[-1]), flush=True)
    rate = {k: statistics.median(r["boxes_per_s"] for r in runs if r["gpus"] == k) for k in args.gpus}
    seconds = {k: statistics.median(r["seconds"] for r in runs if r["gpus"] == k) for k in args.gpus}
    finished = all(r["status"] != "limit" for r in runs)
    commit = (
        args.commit
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
        ).stdout.strip()
    )
    report = {
        "benchmark": "spatial_gpu_scaling",
        "problem": problem.name,
        "code_commit": commit,
        "options": {
            "eps_abs": args.eps_abs,
            "eps_rel": args.eps_rel,
            "subdomains": args.subdomains,
            "time_limit": args.time_limit,
        },
        "runs": runs,
        "median_boxes_per_s": rate,
        "median_seconds": seconds,
        "efficiency_rate": {k: rate[k] / (k * rate[1]) for k in rate if 1 in rate},
        "efficiency_time": {k: seconds[1] / (k * seconds[k]) for k in seconds} if finished and 1 in seconds else None,
    }
    print(json.dumps(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
